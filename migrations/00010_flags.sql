-- Flags reach leads: how a lead resolved an annotator's flag, and items a
-- lead took out of the pool.

-- +goose Up

-- An item out of the pool is handed to no annotator until a lead puts it
-- back; its labels stay. pulled_by is who took it out.
ALTER TABLE items
    ADD COLUMN pulled_at timestamptz,
    ADD COLUMN pulled_by bigint REFERENCES users (id),
    ADD CONSTRAINT items_pulled_by CHECK ((pulled_at IS NULL) = (pulled_by IS NULL));
CREATE INDEX items_pulled_idx ON items (project_id) WHERE pulled_at IS NOT NULL;

-- A flag is an assignment with a flag reason. Its resolution says how a
-- lead settled it (took the item out of the pool, fixed it, or dismissed
-- the flag), who and when; an open flag has none of the three.
ALTER TABLE assignments
    ADD COLUMN flag_resolution      text CHECK (flag_resolution IN ('pulled', 'fixed', 'dismissed')),
    ADD COLUMN flag_resolved_by     bigint REFERENCES users (id),
    ADD COLUMN flag_resolved_at     timestamptz,
    ADD COLUMN flag_resolution_note text NOT NULL DEFAULT '' CHECK (char_length(flag_resolution_note) <= 2000),
    ADD CONSTRAINT assignments_flag_resolved CHECK (
        (flag_resolution IS NULL) = (flag_resolved_by IS NULL)
        AND (flag_resolution IS NULL) = (flag_resolved_at IS NULL)
        AND (flag_resolution IS NULL OR flag IS NOT NULL));
CREATE INDEX assignments_flags_idx ON assignments (project_id, finished_at, id) WHERE flag IS NOT NULL;

-- +goose Down
DROP INDEX assignments_flags_idx;
ALTER TABLE assignments DROP CONSTRAINT assignments_flag_resolved,
    DROP COLUMN flag_resolution_note, DROP COLUMN flag_resolved_at, DROP COLUMN flag_resolved_by, DROP COLUMN flag_resolution;
DROP INDEX items_pulled_idx;
ALTER TABLE items DROP CONSTRAINT items_pulled_by, DROP COLUMN pulled_by, DROP COLUMN pulled_at;
