-- Active time is now bounded per report (attune.MaxActive, 24 hours); the API
-- once took any value, after which every edit of the item overflowed. Bring
-- what such reports stored back within what the rule allows: at most 24
-- hours per revision of an answer set, 24 hours for a draft.

-- +goose Up
UPDATE answer_sets SET active_ms = revision::bigint * 86400000 WHERE active_ms > revision::bigint * 86400000;
UPDATE drafts SET active_ms = 86400000 WHERE active_ms > 86400000;

-- +goose Down
-- The values replaced were not real times; there is nothing to restore.
SELECT 1;
