-- Turn evidence: the turns a rater marked as where a failing answer (NO,
-- or a Likert level of 2 or less) fails. It is stored on the label it
-- explains, so one write stores an answer and its turns together and the
-- label's cascade removes both. The database holds the shape (turns from
-- 1); rubric.ValidateEvidence holds the rest of the rule, with the
-- dialogue's turn count, for every path that takes answers.
--
-- A project says whether it takes evidence: off, optional (the default)
-- or required on every failing answer.

-- +goose Up
ALTER TABLE labels ADD COLUMN evidence int[] NOT NULL DEFAULT '{}'
    CHECK (0 < ALL (evidence) AND array_position(evidence, NULL) IS NULL);
ALTER TABLE projects ADD COLUMN evidence_policy text NOT NULL DEFAULT 'optional'
    CHECK (evidence_policy IN ('off', 'optional', 'required'));

-- +goose Down
ALTER TABLE projects DROP COLUMN evidence_policy;
ALTER TABLE labels DROP COLUMN evidence;
