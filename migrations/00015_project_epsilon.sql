-- A project's alt-test ε is chosen by who its annotators are (0.2 experts,
-- 0.15 trained annotators, 0.1 a crowd, or a custom value); the report uses
-- it unless a request asks for another. Existing projects keep the ε their
-- reports used so far, the trained annotators' 0.15.

-- +goose Up
ALTER TABLE projects ADD COLUMN alt_epsilon double precision NOT NULL DEFAULT 0.15
	CONSTRAINT projects_alt_epsilon_range CHECK (alt_epsilon > 0 AND alt_epsilon < 1);

-- +goose Down
ALTER TABLE projects DROP COLUMN alt_epsilon;
