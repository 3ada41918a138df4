-- A dialogue is stored as the text it was written in (json), no longer
-- taken apart into jsonb's binary form. Nothing queries inside a dialogue
-- but the search job, which converts it once, and a preview of its first
-- message; everything else reads it whole (the workspace, the consensus
-- rule, the judges, the exports), and jsonb had PostgreSQL rebuild its
-- text on every such read: two thirds of the database's work in a
-- dataset export. The import writes the text in the layout jsonb prints
-- (dataset.AppendMessagesJSON), and the conversion below keeps that
-- layout for the items stored before, so both read the same.

-- +goose Up
ALTER TABLE items DROP CONSTRAINT items_messages_check;
ALTER TABLE items ALTER COLUMN messages TYPE json USING messages::json;
ALTER TABLE items ADD CONSTRAINT items_messages_check
    CHECK (json_typeof(messages) = 'array' AND json_array_length(messages) > 0);
-- The new type makes a new column: it keeps lz4 only if asked again (00003).
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE items ALTER COLUMN messages SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not available; items keep the default compression';
END;
$$;
-- +goose StatementEnd
-- items_text stays the one definition of an item's searchable text.
DROP FUNCTION items_text(jsonb);
-- +goose StatementBegin
CREATE FUNCTION items_text(messages json) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_tsvector('english'::regconfig, jsonb_path_query_array(messages::jsonb, '$[*].content'));
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION items_text(json);
ALTER TABLE items DROP CONSTRAINT items_messages_check;
ALTER TABLE items ALTER COLUMN messages TYPE jsonb USING messages::jsonb;
ALTER TABLE items ADD CONSTRAINT items_messages_check
    CHECK (jsonb_typeof(messages) = 'array' AND jsonb_array_length(messages) > 0);
-- The new type makes a new column: it keeps lz4 only if asked again (00003).
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE items ALTER COLUMN messages SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not available; items keep the default compression';
END;
$$;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE FUNCTION items_text(messages jsonb) RETURNS tsvector
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN to_tsvector('english'::regconfig, jsonb_path_query_array(messages, '$[*].content'));
-- +goose StatementEnd
