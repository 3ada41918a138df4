-- Judge prompt versions: a judge's prompts for one rubric version, kept as
-- immutable numbered versions so that every label says which prompt
-- reached it, and a judge with an edited prompt counts as a rater of its
-- own in agreement.

-- +goose Up

-- Version 1 of a judge's prompts for a rubric version is the rubric's own
-- prompts, verbatim; a lead makes the next one by editing a copy of any
-- version (parent_id). prompts maps each rubric item key to its template.
CREATE TABLE judge_prompts (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    judge_id          bigint NOT NULL REFERENCES judges (id) ON DELETE CASCADE,
    rubric_version_id bigint NOT NULL REFERENCES rubric_versions (id),
    version           int NOT NULL CHECK (version >= 1),
    parent_id         bigint REFERENCES judge_prompts (id),
    prompts           jsonb NOT NULL CHECK (jsonb_typeof(prompts) = 'object'),
    created_by        bigint REFERENCES users (id),
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (judge_id, rubric_version_id, version),
    CHECK ((version = 1) = (parent_id IS NULL))
);

-- A version never changes: a run's labels name it, so an edit would make
-- them lie about the prompt that produced them.
-- +goose StatementBegin
CREATE FUNCTION judge_prompts_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'judge prompt version % is immutable: make a new version', OLD.id;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER judge_prompts_immutable BEFORE UPDATE ON judge_prompts
    FOR EACH ROW EXECUTE FUNCTION judge_prompts_immutable();

-- A judge with an edited prompt is a rater of its own. The judge's first
-- rater (prompt_id NULL) answers with the rubric's own prompts (version
-- 1); each later version that runs gets its own rater.
ALTER TABLE raters ADD COLUMN prompt_id bigint UNIQUE REFERENCES judge_prompts (id);
ALTER TABLE raters DROP CONSTRAINT raters_judge_id_key;
CREATE UNIQUE INDEX raters_judge_idx ON raters (judge_id) WHERE prompt_id IS NULL;
ALTER TABLE raters ADD CHECK (prompt_id IS NULL OR kind = 'judge');

-- A run records the prompt version it used (NULL: a run made before
-- versions, with the rubric's own prompts) and the rater its answers go to.
ALTER TABLE judge_runs ADD COLUMN prompt_id bigint REFERENCES judge_prompts (id);
ALTER TABLE judge_runs ADD COLUMN rater_id bigint REFERENCES raters (id);
UPDATE judge_runs r SET rater_id = (SELECT id FROM raters WHERE judge_id = r.judge_id AND prompt_id IS NULL);
ALTER TABLE judge_runs ALTER COLUMN rater_id SET NOT NULL;

-- +goose Down
ALTER TABLE judge_runs DROP COLUMN rater_id;
ALTER TABLE judge_runs DROP COLUMN prompt_id;
-- The answers of later prompt versions go with their raters: before
-- versions, a judge had one rater only.
DELETE FROM answer_sets WHERE rater_id IN (SELECT id FROM raters WHERE prompt_id IS NOT NULL);
DELETE FROM raters WHERE prompt_id IS NOT NULL;
DROP INDEX raters_judge_idx;
ALTER TABLE raters DROP COLUMN prompt_id;
ALTER TABLE raters ADD CONSTRAINT raters_judge_id_key UNIQUE (judge_id);
DROP TABLE judge_prompts;
DROP FUNCTION judge_prompts_immutable();
