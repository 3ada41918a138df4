-- An import inserts one item_counts row per item (items_count_rows), and
-- the foreign key item_counts -> items checked each of them, one
-- lookup in items' primary key per row: most of what the counters cost an
-- import. The key goes; what it guarded stays true by construction:
-- item_counts rows are made only by the trigger on items, in the statement
-- that inserts the items, and a statement-level trigger on items now
-- removes the counts of deleted items (a project's deletion too, which
-- reaches items through its cascade), once per statement instead of once
-- per row.

-- +goose Up
ALTER TABLE item_counts DROP CONSTRAINT item_counts_item_id_fkey;

-- +goose StatementBegin
CREATE FUNCTION items_uncount_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM item_counts c USING old_items o WHERE c.item_id = o.id;
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER items_uncount_rows AFTER DELETE ON items
    REFERENCING OLD TABLE AS old_items FOR EACH STATEMENT EXECUTE FUNCTION items_uncount_rows();

-- +goose Down
DROP TRIGGER items_uncount_rows ON items;
DROP FUNCTION items_uncount_rows();
DELETE FROM item_counts c WHERE NOT EXISTS (SELECT 1 FROM items i WHERE i.id = c.item_id);
ALTER TABLE item_counts ADD CONSTRAINT item_counts_item_id_fkey
    FOREIGN KEY (item_id) REFERENCES items (id) ON DELETE CASCADE;
