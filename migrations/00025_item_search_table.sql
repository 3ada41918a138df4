-- The expression index of 00024 made every import compute to_tsvector of
-- every turn while the import held its transaction: the import ran at a
-- fifth of its former speed. An item's search document moves to a narrow
-- table of its own, filled after the import commits by a queued job
-- (store.IndexItems), so the import only copies. items_text stays the one
-- definition of an item's searchable text: the job calls it. A phrase
-- query now reads the stored document instead of computing it again for
-- every candidate.

-- +goose Up
DROP INDEX items_text_idx;
CREATE TABLE item_search (
    item_id    bigint PRIMARY KEY REFERENCES items (id) ON DELETE CASCADE,
    project_id bigint NOT NULL,
    document   tsvector NOT NULL
);
CREATE INDEX item_search_document_idx ON item_search USING gin (document);
INSERT INTO item_search (item_id, project_id, document)
SELECT id, project_id, items_text(messages) FROM items;

-- +goose Down
DROP TABLE item_search;
CREATE INDEX items_text_idx ON items USING gin (items_text(messages));
