-- Dialogues are large text; lz4 compresses them several times faster than
-- the default pglz, which is most of the cost of a big import. Servers
-- built without lz4 keep the default.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
    ALTER TABLE items ALTER COLUMN messages SET COMPRESSION lz4, ALTER COLUMN meta SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not available; items keep the default compression';
END;
$$;
-- +goose StatementEnd

-- +goose Down
ALTER TABLE items ALTER COLUMN messages SET COMPRESSION default, ALTER COLUMN meta SET COMPRESSION default;
