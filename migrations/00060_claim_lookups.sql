-- The claim asks two questions of a person's assignments on every
-- submit-and-next, and the indexes answered neither exactly:
--
--   - "was this person ever given this item?", for each candidate item
--     (claimOpen). The index on (rater_id, project_id) made it a walk
--     over every assignment the person ever had in the project, read from
--     the heap for each candidate: the largest share of the database's
--     time under many annotators, and growing with each item they label.
--     With item_id after project_id it is one index probe.
--   - "does this person hold an open assignment?" (claimMine), asked by
--     every statement of the claim. The open assignments were indexed by
--     project and lease alone, so each ask walked every open assignment
--     of the project. With rater_id before the lease it is one probe; the
--     reclaim of lapsed leases still reads the project's open
--     assignments, one per annotator at most, from the same index.
--
-- The same two indexes, one column wider each: a write pays no more index
-- entries than before.

-- +goose Up
DROP INDEX assignments_rater_idx;
CREATE INDEX assignments_rater_idx ON assignments (rater_id, project_id, item_id);
DROP INDEX assignments_active_idx;
CREATE INDEX assignments_active_idx ON assignments (project_id, rater_id, lease_expires_at) WHERE state = 'active';

-- +goose Down
DROP INDEX assignments_active_idx;
CREATE INDEX assignments_active_idx ON assignments (project_id, lease_expires_at) WHERE state = 'active';
DROP INDEX assignments_rater_idx;
CREATE INDEX assignments_rater_idx ON assignments (rater_id, project_id);
