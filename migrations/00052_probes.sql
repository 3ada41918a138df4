-- Robustness probes of a judge (docs/judges.md, "Robustness probes"). A
-- probe is a judge run of its own kind: the same calls, parsing, retries,
-- pacing, spending and durable jobs as a run that labels, over the
-- project's calibration items only. Its answers are kept in probe_answers
-- and never as labels, so they count nowhere as the judge's answers (not
-- in agreement, the alt-test nor the gold). A project's probe thresholds
-- are NULL until a lead sets them: the defaults are probe's own
-- (probe.DefaultThresholds), decided in one place.

-- +goose Up
ALTER TABLE judge_runs ADD COLUMN kind text NOT NULL DEFAULT 'label' CHECK (kind IN ('label', 'probe'));
-- A probe asks each calibration item probe_k times as it is (the retest)
-- and once under each neutral rewrite.
ALTER TABLE judge_runs ADD COLUMN probe_k int CHECK (probe_k BETWEEN 3 AND 20);
ALTER TABLE judge_runs ADD CONSTRAINT judge_runs_probe_k_kind CHECK ((kind = 'probe') = (probe_k IS NOT NULL));

-- One active run of a judge and prompt version per project, and one
-- active probe beside it: a probe writes no labels, so it cannot answer
-- an item twice as the rater a labelling run answers it as.
DROP INDEX judge_runs_one_active_idx;
CREATE UNIQUE INDEX judge_runs_one_active_idx ON judge_runs (project_id, rater_id, kind)
    WHERE status IN ('queued', 'running');

-- One row per probe, item, variant and ask: variant 'original' is the
-- dialogue as it is, asked k times (ask 0 to k − 1); a rewrite is asked
-- once (ask 0). answers map each rubric item key to the judge's answer.
CREATE TABLE probe_answers (
    run_id      bigint NOT NULL REFERENCES judge_runs (id) ON DELETE CASCADE,
    item_id     bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    variant     text NOT NULL CHECK (variant IN ('original', 'normalise', 'rename', 'append')),
    ask         int NOT NULL CHECK (ask >= 0),
    answers     jsonb NOT NULL CHECK (jsonb_typeof(answers) = 'object'),
    answered_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, item_id, variant, ask)
);

ALTER TABLE projects ADD COLUMN probe_thresholds jsonb CHECK (probe_thresholds IS NULL OR jsonb_typeof(probe_thresholds) = 'object');

-- +goose Down
ALTER TABLE projects DROP COLUMN probe_thresholds;
DROP TABLE probe_answers;
DELETE FROM judge_runs WHERE kind = 'probe';
DROP INDEX judge_runs_one_active_idx;
CREATE UNIQUE INDEX judge_runs_one_active_idx ON judge_runs (project_id, rater_id)
    WHERE status IN ('queued', 'running');
ALTER TABLE judge_runs DROP CONSTRAINT judge_runs_probe_k_kind;
ALTER TABLE judge_runs DROP COLUMN probe_k;
ALTER TABLE judge_runs DROP COLUMN kind;
