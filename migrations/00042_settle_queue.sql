-- The consensus rule no longer runs inside the submit that completes an
-- item: it read every answer of the item, decided, wrote gold and checked
-- the project's full overlap under a lock of the whole project, all while
-- the annotator waited and other submits queued behind those locks. The
-- submit now leaves a row here, in its own transaction, for each item
-- that has its overlap of labels (completed: this submit gave it its k-th
-- label); the settler (store.Settler) takes a project's rows, settles
-- their items and checks the project's full overlap in one transaction,
-- and deletes the rows in it: a settler that dies leaves the rows for the
-- next. Rows are never updated, so a submit never waits for a settler.
-- No foreign keys: the insert stays one index entry, and the rows of a
-- deleted project or item are settled as nothing and deleted.

-- +goose Up
CREATE TABLE settle_queue (
    id         bigserial PRIMARY KEY,
    project_id bigint NOT NULL,
    item_id    bigint NOT NULL,
    completed  boolean NOT NULL,
    queued_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX settle_queue_project_idx ON settle_queue (project_id, id);

-- +goose Down
DROP TABLE settle_queue;
