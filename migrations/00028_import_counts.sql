-- An import's items reached their counters through a statement trigger on
-- items whose transition table held every new row whole (some 2 KB each,
-- spilled to temporary files) only for the trigger to read two of their
-- columns: most of what counting cost an import. The trigger goes; the
-- one statement-level way items are made, store.ImportItems, writes their
-- item_counts rows itself, set-based, in the same transaction right after
-- it inserts them (the progress trigger on item_counts still follows).
--
-- The hash check was a regular expression with a bounded repetition,
-- several microseconds a row (as much as the rest of items' checks
-- together); a length and a search for any character outside [0-9a-f]
-- accept exactly the same strings at a tenth of the cost.

-- +goose Up
DROP TRIGGER items_count_rows ON items;
DROP FUNCTION items_count_rows();

ALTER TABLE items DROP CONSTRAINT items_sha256_check,
    ADD CONSTRAINT items_sha256_check CHECK (octet_length(sha256) = 64 AND sha256 !~ '[^0-9a-f]');

-- +goose Down
ALTER TABLE items DROP CONSTRAINT items_sha256_check,
    ADD CONSTRAINT items_sha256_check CHECK (sha256 ~ '^[0-9a-f]{64}$');

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
