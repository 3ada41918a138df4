-- The labels that carry turn evidence, by project, item and rater: the
-- dataset export reads each answer set's turns beside its answers, and
-- the report reads them for the agreement on evidence. Evidence is on few
-- labels (a failing answer that names turns), so the index holds only
-- those and costs nothing on the labels without.

-- +goose Up
CREATE INDEX labels_evidence_idx ON labels (project_id, item_id, rater_id)
    INCLUDE (rubric_item_key, evidence) WHERE cardinality(evidence) > 0;

-- +goose Down
DROP INDEX labels_evidence_idx;
