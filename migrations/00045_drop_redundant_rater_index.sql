-- answer_sets_rater_idx (rater_id, project_id) is the leading part of
-- answer_sets_rater_submitted_idx (rater_id, project_id, submitted_at, id),
-- which serves every query it could; each submit paid to keep both.

-- +goose Up
DROP INDEX answer_sets_rater_idx;

-- +goose Down
CREATE INDEX answer_sets_rater_idx ON answer_sets (rater_id, project_id);
