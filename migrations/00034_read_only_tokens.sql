-- A token may be limited to reading: the API refuses it every method but
-- GET, so a report dashboard or a notebook that only reads cannot change
-- anything, nor spend on model calls, with it.

-- +goose Up
ALTER TABLE api_tokens ADD COLUMN read_only boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN read_only;
