-- A person's choice to read every rubric criterion in full on the
-- annotate page, rather than the compact rubric that opens only the
-- criterion in hand.

-- +goose Up
ALTER TABLE users ADD COLUMN rubric_expanded boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE users DROP COLUMN rubric_expanded;
