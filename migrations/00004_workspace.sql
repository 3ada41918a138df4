-- The annotator's workspace: drafts that survive a refresh or a crash,
-- items a lead marks as sensitive, and an index for walking one's own
-- labels in the order they were made.

-- +goose Up

-- A lead's mark that an item mentions suicide or self-harm in words the
-- workspace's list misses: it is announced with a content note.
ALTER TABLE items ADD COLUMN sensitive boolean NOT NULL DEFAULT false;

-- Unsaved answers, one per rater and item. base_revision is the revision of
-- the answer set a draft edits (0 for an item not yet submitted), so that a
-- draft saved after its answers were stored can be told apart and ignored.
CREATE TABLE drafts (
    rater_id      bigint NOT NULL REFERENCES raters (id),
    item_id       bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    answers       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(answers) = 'object'),
    rationales    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(rationales) = 'object'),
    rationale     text NOT NULL DEFAULT '',
    active_ms     bigint NOT NULL DEFAULT 0 CHECK (active_ms >= 0),
    base_revision int NOT NULL DEFAULT 0 CHECK (base_revision >= 0),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (rater_id, item_id)
);
CREATE INDEX drafts_item_idx ON drafts (item_id);

-- A draft ends when its answers are stored or its item skipped, in the
-- same transaction, whichever code path stores them.
-- +goose StatementBegin
CREATE FUNCTION drop_draft() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM drafts WHERE rater_id = NEW.rater_id AND item_id = NEW.item_id;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER answer_sets_drop_draft AFTER INSERT OR UPDATE OF revision ON answer_sets
    FOR EACH ROW EXECUTE FUNCTION drop_draft();
CREATE TRIGGER assignments_drop_draft AFTER UPDATE OF state ON assignments
    FOR EACH ROW WHEN (NEW.state = 'skipped') EXECUTE FUNCTION drop_draft();

-- Previous and next of one's own labels, by submission time.
CREATE INDEX answer_sets_rater_submitted_idx ON answer_sets (rater_id, project_id, submitted_at, id);

-- +goose Down
DROP INDEX answer_sets_rater_submitted_idx;
DROP TRIGGER assignments_drop_draft ON assignments;
DROP TRIGGER answer_sets_drop_draft ON answer_sets;
DROP FUNCTION drop_draft();
DROP TABLE drafts;
ALTER TABLE items DROP COLUMN sensitive;
