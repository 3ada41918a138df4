-- Every submit and claim changed an item's done and holds, which sat in the
-- indexed expression of items_next_idx: no such update could be HOT, each
-- copied a wide item row and touched every index of items, and the work
-- queue waded through the dead versions. The counters move to a narrow
-- table of their own. The queue's order is a stored column, filled =
-- done + holds: a submit moves one from holds to done and leaves filled
-- as it was, so it changes no indexed value and can be a HOT update
-- (fillfactor leaves the room on the page for it). Only claims and
-- releases, which change the order, touch the index.
--
-- project_progress keeps, per project, how many items have each number of
-- labels, so that the progress line reads a few rows instead of every
-- item of the project. Triggers keep it in the same transaction as the
-- change to item_counts, whatever path makes it (submit, import, pull,
-- deletion). Each connection adds to its own shard (from its backend
-- pid), so that concurrent submits do not queue on one row; a shard's
-- count may go below zero, the sum over shards is exact.

-- +goose Up
CREATE TABLE item_counts (
    item_id    bigint PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    project_id bigint NOT NULL,
    done       int NOT NULL DEFAULT 0 CHECK (done >= 0),
    holds      int NOT NULL DEFAULT 0 CHECK (holds >= 0),
    pulled     boolean NOT NULL DEFAULT false,
    filled     int GENERATED ALWAYS AS (done + holds) STORED
) WITH (fillfactor = 70);
CREATE INDEX item_counts_next_idx ON item_counts (project_id, filled DESC, item_id) WHERE NOT pulled;
INSERT INTO item_counts (item_id, project_id, done, holds, pulled)
SELECT id, project_id, done, holds, pulled_at IS NOT NULL FROM items;

CREATE TABLE project_progress (
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    shard      int NOT NULL,
    done       int NOT NULL,
    pulled     boolean NOT NULL,
    items      bigint NOT NULL,
    PRIMARY KEY (project_id, shard, done, pulled)
);
INSERT INTO project_progress (project_id, shard, done, pulled, items)
SELECT project_id, 0, done, pulled, count(*) FROM item_counts GROUP BY 1, 3, 4;

-- +goose StatementBegin
CREATE FUNCTION items_count_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO item_counts (item_id, project_id, pulled)
    SELECT id, project_id, pulled_at IS NOT NULL FROM new_items;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER items_count_rows AFTER INSERT ON items
    REFERENCING NEW TABLE AS new_items FOR EACH STATEMENT EXECUTE FUNCTION items_count_rows();

-- Items arrive and leave in bulk (imports, deletions): one statement's
-- rows are added at once, in key order, on shards 64-127, apart from the
-- submits' shards so that a long import never holds up a submit.
-- +goose StatementBegin
CREATE FUNCTION item_counts_progress_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO project_progress AS g (project_id, shard, done, pulled, items)
        SELECT project_id, 64 + pg_backend_pid() % 64, done, pulled, count(*) FROM new_counts
        GROUP BY 1, 3, 4 ORDER BY 1, 3, 4
        ON CONFLICT (project_id, shard, done, pulled) DO UPDATE SET items = g.items + EXCLUDED.items;
    ELSE
        -- A project's deletion takes its progress with it.
        INSERT INTO project_progress AS g (project_id, shard, done, pulled, items)
        SELECT project_id, 64 + pg_backend_pid() % 64, done, pulled, -count(*) FROM old_counts d
        WHERE EXISTS (SELECT 1 FROM projects p WHERE p.id = d.project_id)
        GROUP BY 1, 3, 4 ORDER BY 1, 3, 4
        ON CONFLICT (project_id, shard, done, pulled) DO UPDATE SET items = g.items + EXCLUDED.items;
    END IF;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER item_counts_progress_insert AFTER INSERT ON item_counts
    REFERENCING NEW TABLE AS new_counts FOR EACH STATEMENT EXECUTE FUNCTION item_counts_progress_rows();
CREATE TRIGGER item_counts_progress_delete AFTER DELETE ON item_counts
    REFERENCING OLD TABLE AS old_counts FOR EACH STATEMENT EXECUTE FUNCTION item_counts_progress_rows();

-- A label or a pull moves one item from one count to another. It is
-- applied when the transaction commits (deferred), after every other
-- lock the transaction takes: a submit that waits for an item to claim
-- holds no progress row meanwhile, so two submits of one shard never wait
-- for each other in a circle. Claims, which change only holds, do not
-- fire it.
-- +goose StatementBegin
CREATE FUNCTION item_counts_progress_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO project_progress AS g (project_id, shard, done, pulled, items)
    SELECT * FROM (VALUES (OLD.project_id, pg_backend_pid() % 64, OLD.done, OLD.pulled, -1::bigint),
                          (NEW.project_id, pg_backend_pid() % 64, NEW.done, NEW.pulled, 1::bigint)) v
    ORDER BY 3, 4
    ON CONFLICT (project_id, shard, done, pulled) DO UPDATE SET items = g.items + EXCLUDED.items;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE CONSTRAINT TRIGGER item_counts_progress_update AFTER UPDATE ON item_counts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (OLD.done IS DISTINCT FROM NEW.done OR OLD.pulled IS DISTINCT FROM NEW.pulled)
    EXECUTE FUNCTION item_counts_progress_row();

DROP INDEX items_next_idx;
ALTER TABLE items DROP COLUMN done, DROP COLUMN holds;

-- The session row is written at most once a minute (and when its data
-- change); user_id lets the request's first query read the account with
-- the session.
ALTER TABLE sessions ADD COLUMN user_id bigint;

-- +goose Down
ALTER TABLE sessions DROP COLUMN user_id;
ALTER TABLE items
    ADD COLUMN done  int NOT NULL DEFAULT 0 CHECK (done >= 0),
    ADD COLUMN holds int NOT NULL DEFAULT 0 CHECK (holds >= 0);
UPDATE items i SET done = c.done, holds = c.holds FROM item_counts c WHERE c.item_id = i.id;
CREATE INDEX items_next_idx ON items (project_id, (done + holds) DESC, id);
DROP TRIGGER items_count_rows ON items;
DROP FUNCTION items_count_rows();
DROP TABLE project_progress;
DROP TABLE item_counts;
DROP FUNCTION item_counts_progress_row();
DROP FUNCTION item_counts_progress_rows();
