-- A project's system key: the item meta key that names the dialogue
-- system that produced an item's assistant turns. Datasets name it as
-- they please ("system", "model", "arm"...), so it is the project's
-- setting rather than a key every query must spell out; estimates, draws,
-- failure maps and the items browser read it when a query names none.
-- Old projects keep the key they were read by until now, "system". The
-- database holds the shape (non-empty, at most 64 characters);
-- attune.Project.Validate words the same rule for every path.

-- +goose Up
ALTER TABLE projects ADD COLUMN system_key text NOT NULL DEFAULT 'system'
    CHECK (system_key <> '' AND char_length(system_key) <= 64);

-- +goose Down
ALTER TABLE projects DROP COLUMN system_key;
