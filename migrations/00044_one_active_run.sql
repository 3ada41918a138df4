-- At most one run of a judge with one prompt version is queued or running
-- on a project: two at once answer the same items twice as the same rater
-- and pay for it twice. The page checked this before inserting, which two
-- starts at once both passed, and the command line did not check at all;
-- the index makes it the database's rule, so every path and every race is
-- held to it. A run's rater stands for its judge and prompt version (the
-- judge's own rater for the rubric's prompt, the version's rater for a
-- later one), so (project, rater) is (project, judge, prompt version).

-- +goose Up
-- Runs that already break the rule are settled first, keeping the oldest
-- active run of each judge and prompt version: the rule would have refused
-- every later start, and the oldest has done the most of the work. The
-- others are cancelled with the reason; their answers so far stay.
WITH ranked AS (
    SELECT id, row_number() OVER (PARTITION BY project_id, rater_id ORDER BY created_at, id) AS n
    FROM judge_runs
    WHERE status IN ('queued', 'running')
)
UPDATE judge_runs r
SET status = 'cancelled', finished_at = now(),
    reason = 'cancelled on upgrade: an older run of this judge with this prompt version was still queued or running on the project'
FROM ranked
WHERE r.id = ranked.id AND ranked.n > 1;

CREATE UNIQUE INDEX judge_runs_one_active_idx ON judge_runs (project_id, rater_id)
    WHERE status IN ('queued', 'running');

-- +goose Down
-- The runs cancelled on the way up stay cancelled: which of them would
-- have gone on is no longer known, and their answers are kept either way.
DROP INDEX judge_runs_one_active_idx;
