-- A draft keeps the turns a person has marked so far, as typed, beside its
-- answers and notes: a refresh or a crash before the submit no longer
-- loses them. They are checked, like the answers, when submitted.

-- +goose Up
ALTER TABLE drafts ADD COLUMN evidence jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(evidence) = 'object');

-- +goose Down
ALTER TABLE drafts DROP COLUMN evidence;
