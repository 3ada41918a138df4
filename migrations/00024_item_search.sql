-- Leads find items by what their dialogue says: full-text search over the
-- text of every turn, the roles left out. items_text is the one definition
-- of an item's searchable text; the index is built on it and the search
-- calls it, so the two cannot drift apart. An item's messages never change
-- once labelled and are never touched by the counters' updates, so the
-- index leaves those updates HOT. The dialogue stays stored once, in
-- messages: an expression index adds no column to the table's rows.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION items_text(messages jsonb) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_tsvector('english'::regconfig, jsonb_path_query_array(messages, '$[*].content'));
-- +goose StatementEnd
CREATE INDEX items_text_idx ON items USING gin (items_text(messages));

-- +goose Down
DROP INDEX items_text_idx;
DROP FUNCTION items_text(jsonb);
