-- A project's reads (its exports, its agreement report, its drill-down)
-- must cost what the project holds, not what the database holds. Labels
-- knew their project only through their item, so PostgreSQL could reach a
-- project's labels only by probing item after item or by reading every
-- project's labels: with a large project beside it, a small project's
-- export read millions of other labels and sorted on disk. Gold labels
-- were the same. Each label and gold label now carries its item's
-- project, and the indexes those reads walk start with the project.
--
-- The project is the item's, always: a composite foreign key ties
-- (item_id, project_id) to the item, and a trigger fills it from the item
-- when an insert leaves it out, so that writers need not know of it.

-- +goose Up
ALTER TABLE labels ADD COLUMN project_id bigint;
-- Filling the column is not an edit: the history trigger would only check
-- and skip every row.
ALTER TABLE labels DISABLE TRIGGER labels_history;
UPDATE labels l SET project_id = i.project_id FROM items i WHERE i.id = l.item_id;
ALTER TABLE labels ENABLE TRIGGER labels_history;
ALTER TABLE labels ALTER COLUMN project_id SET NOT NULL,
    ADD CONSTRAINT labels_item_project_fkey FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE;

-- +goose StatementBegin
CREATE FUNCTION item_project() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT project_id INTO NEW.project_id FROM items WHERE id = NEW.item_id;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER labels_project BEFORE INSERT ON labels
    FOR EACH ROW WHEN (NEW.project_id IS NULL) EXECUTE FUNCTION item_project();

ALTER TABLE gold_labels ADD COLUMN project_id bigint;
UPDATE gold_labels g SET project_id = i.project_id FROM items i WHERE i.id = g.item_id;
ALTER TABLE gold_labels ALTER COLUMN project_id SET NOT NULL,
    ADD CONSTRAINT gold_labels_item_project_fkey FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE;
CREATE TRIGGER gold_labels_project BEFORE INSERT ON gold_labels
    FOR EACH ROW WHEN (NEW.project_id IS NULL) EXECUTE FUNCTION item_project();
-- A project's gold by item, with the method that tells a person's gold
-- from the rule's.
CREATE INDEX gold_labels_project_idx ON gold_labels (project_id, item_id) INCLUDE (method);

-- A project's labels by item and rater, as exports and the agreement
-- report read them, with what they read beside the key.
CREATE INDEX labels_project_item_idx ON labels (project_id, item_id, rater_id, rubric_item_key) INCLUDE (value, created_at);
-- One rubric item's labels of a project in item order, for the
-- drill-down: it replaces the index of migration 00019, which walked the
-- rubric item of every project sharing the rubric version.
DROP INDEX labels_rubric_item_idx;
CREATE INDEX labels_project_key_idx ON labels (project_id, rubric_item_key, item_id) INCLUDE (rater_id, value);
-- The consensus verdicts of a project, joined to its items by the gold
-- counts and the consensus run (the queue has its own partial index).
CREATE INDEX gold_consensus_project_idx ON gold_consensus (project_id, item_id);

-- +goose Down
DROP INDEX gold_consensus_project_idx;
DROP INDEX labels_project_key_idx;
CREATE INDEX labels_rubric_item_idx ON labels (rubric_version_id, rubric_item_key, item_id) INCLUDE (rater_id, value);
DROP INDEX labels_project_item_idx;
DROP INDEX gold_labels_project_idx;
DROP TRIGGER gold_labels_project ON gold_labels;
ALTER TABLE gold_labels DROP CONSTRAINT gold_labels_item_project_fkey, DROP COLUMN project_id;
DROP TRIGGER labels_project ON labels;
DROP FUNCTION item_project();
ALTER TABLE labels DROP CONSTRAINT labels_item_project_fkey, DROP COLUMN project_id;
