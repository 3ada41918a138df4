-- The dataset export reads each answer set's turns from the set itself,
-- beside its answers (answer_sets.evidence, which every writer keeps since
-- 00055), and the report's agreement on evidence reads them there too: no
-- query reads the labels' evidence through an index any more, and the
-- index of 00051 only cost the writes of labels with turns.

-- +goose Up
DROP INDEX labels_evidence_idx;

-- +goose Down
CREATE INDEX labels_evidence_idx ON labels (project_id, item_id, rater_id)
    INCLUDE (rubric_item_key, evidence) WHERE cardinality(evidence) > 0;
