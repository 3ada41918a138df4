-- Each item with gold has one row here: a copy of its gold, one JSON
-- object of rubric item key to value, and whether a lead decided any of
-- it. The dataset export reads the gold of every item; from gold_labels
-- that was a row per item and rubric item, and finding the items with gold
-- took a pass over all of them. Like the answer sets' copy of their
-- answers (00038), the copy is kept by the database after every statement
-- that writes gold_labels, which stay the record, with their notes and
-- their history.

-- +goose Up
CREATE TABLE item_gold (
    item_id     bigint PRIMARY KEY,
    project_id  bigint NOT NULL,
    gold        json NOT NULL,
    adjudicated boolean NOT NULL,
    FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE
);
CREATE INDEX item_gold_project_idx ON item_gold (project_id, item_id);

-- +goose StatementBegin
CREATE FUNCTION item_gold_copy() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Statements writing the gold of the same items are made to take
    -- turns, in one order, so that the copy below is read after the other
    -- transaction has ended: under READ COMMITTED each statement takes a
    -- new snapshot. The turns are taken on the copy's rows, made first
    -- where missing (a row lock costs no shared memory, which a lock per
    -- item of a large settle would exhaust, and only this trigger takes
    -- it, so it cannot deadlock with the locks the code takes on items).
    INSERT INTO item_gold (item_id, project_id, gold, adjudicated)
        SELECT c.item_id, min(c.project_id), '{}', false FROM changed c
        WHERE EXISTS (SELECT 1 FROM gold_labels l WHERE l.item_id = c.item_id)
        GROUP BY c.item_id ORDER BY c.item_id
        ON CONFLICT (item_id) DO NOTHING;
    PERFORM 1 FROM item_gold g
        WHERE g.item_id IN (SELECT item_id FROM changed)
        ORDER BY g.item_id FOR NO KEY UPDATE;
    DELETE FROM item_gold g
        WHERE g.item_id IN (SELECT item_id FROM changed)
          AND NOT EXISTS (SELECT 1 FROM gold_labels l WHERE l.item_id = g.item_id);
    UPDATE item_gold g
        SET gold = c.gold, adjudicated = c.adjudicated
        FROM (SELECT l.item_id,
                     json_object_agg(l.rubric_item_key, l.value ORDER BY l.rubric_item_key) AS gold,
                     bool_or(l.method = 'adjudicated') AS adjudicated
              FROM gold_labels l
              WHERE l.item_id IN (SELECT item_id FROM changed)
              GROUP BY l.item_id) c
        WHERE g.item_id = c.item_id
          AND (g.gold::text, g.adjudicated) IS DISTINCT FROM (c.gold::text, c.adjudicated);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- A trigger with transition tables fires on one event only.
CREATE TRIGGER gold_labels_copy_inserted AFTER INSERT ON gold_labels
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION item_gold_copy();
CREATE TRIGGER gold_labels_copy_updated AFTER UPDATE ON gold_labels
    REFERENCING NEW TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION item_gold_copy();
CREATE TRIGGER gold_labels_copy_deleted AFTER DELETE ON gold_labels
    REFERENCING OLD TABLE AS changed
    FOR EACH STATEMENT EXECUTE FUNCTION item_gold_copy();

-- TRUNCATE fires no DELETE trigger: it takes every copy with it.
-- +goose StatementBegin
CREATE FUNCTION item_gold_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM item_gold;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER gold_labels_copy_truncated AFTER TRUNCATE ON gold_labels
    FOR EACH STATEMENT EXECUTE FUNCTION item_gold_clear();

INSERT INTO item_gold (item_id, project_id, gold, adjudicated)
    SELECT l.item_id, min(l.project_id),
           json_object_agg(l.rubric_item_key, l.value ORDER BY l.rubric_item_key),
           bool_or(l.method = 'adjudicated')
    FROM gold_labels l
    GROUP BY l.item_id;

-- +goose Down
DROP TRIGGER gold_labels_copy_truncated ON gold_labels;
DROP FUNCTION item_gold_clear();
DROP TRIGGER gold_labels_copy_deleted ON gold_labels;
DROP TRIGGER gold_labels_copy_updated ON gold_labels;
DROP TRIGGER gold_labels_copy_inserted ON gold_labels;
DROP FUNCTION item_gold_copy();
DROP TABLE item_gold;
