-- A person's submit writes their answer set once: the answers, the notes
-- on them and the turns marked, as three JSON values on the answer set,
-- and a row here. The label rows (one per rubric item, into the labels'
-- indexes) that the report, drill-down, gold and exports read are written
-- from it after the commit, by the settler (store.Settler) within
-- SettleBound, or earlier by any read of the project's labels that finds
-- rows here (store's currentLabels), so a lead never reads a project
-- behind its submits. Writing twelve rows into five indexes under the
-- contention of many annotators was half of a submit's cost
-- (BenchmarkSaturationSQL); written in batches by one transaction, the
-- same rows cost a fraction of it.
--
-- Exactly once: a deriving deletes the rows it takes in the transaction
-- that writes their labels, so one killed mid-way leaves them for the
-- next; the insert skips labels already there. No foreign key: the insert
-- stays one index entry, and the row of a deleted answer set derives
-- nothing and is deleted.
--
-- The answer set's three values are kept equal to its labels by the
-- database after every statement that writes labels (edits, judges'
-- answers, imports), as the answers alone were since 00038.

-- +goose Up
ALTER TABLE answer_sets
    ADD COLUMN rationales json NOT NULL DEFAULT '{}',
    ADD COLUMN evidence json NOT NULL DEFAULT '{}';

CREATE TABLE labels_pending (
    project_id    bigint NOT NULL,
    answer_set_id bigint NOT NULL,
    PRIMARY KEY (project_id, answer_set_id)
);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION answer_sets_copy_labels() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Labels written from their set's values (store's deriveLabels,
    -- which says so for its own statement) are those values already.
    IF current_setting('attune.labels_from_sets', true) = 'on' THEN
        RETURN NULL;
    END IF;
    -- The sets are locked first, in one order, so that the copy below is
    -- read after any other transaction writing the same sets has ended:
    -- under READ COMMITTED each statement takes a new snapshot.
    PERFORM 1 FROM answer_sets s
        WHERE s.id IN (SELECT answer_set_id FROM changed)
        ORDER BY s.id FOR NO KEY UPDATE;
    UPDATE answer_sets s
        SET answers = c.answers, rationales = c.rationales, evidence = c.evidence
        FROM (SELECT x.id,
                     coalesce(json_object_agg(l.rubric_item_key, l.value ORDER BY l.rubric_item_key)
                         FILTER (WHERE l.id IS NOT NULL), '{}') AS answers,
                     coalesce(json_object_agg(l.rubric_item_key, l.rationale ORDER BY l.rubric_item_key)
                         FILTER (WHERE l.rationale <> ''), '{}') AS rationales,
                     coalesce(json_object_agg(l.rubric_item_key, l.evidence ORDER BY l.rubric_item_key)
                         FILTER (WHERE cardinality(l.evidence) > 0), '{}') AS evidence
              FROM (SELECT DISTINCT answer_set_id AS id FROM changed) x
              LEFT JOIN labels l ON l.answer_set_id = x.id
              GROUP BY x.id) c
        WHERE s.id = c.id AND (s.answers::text IS DISTINCT FROM c.answers::text
            OR s.rationales::text IS DISTINCT FROM c.rationales::text
            OR s.evidence::text IS DISTINCT FROM c.evidence::text);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION answer_sets_clear_answers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE answer_sets SET answers = '{}', rationales = '{}', evidence = '{}'
        WHERE answers::text <> '{}' OR rationales::text <> '{}' OR evidence::text <> '{}';
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

UPDATE answer_sets s
    SET rationales = c.rationales, evidence = c.evidence
    FROM (SELECT l.answer_set_id AS id,
                 coalesce(json_object_agg(l.rubric_item_key, l.rationale ORDER BY l.rubric_item_key)
                     FILTER (WHERE l.rationale <> ''), '{}') AS rationales,
                 coalesce(json_object_agg(l.rubric_item_key, l.evidence ORDER BY l.rubric_item_key)
                     FILTER (WHERE cardinality(l.evidence) > 0), '{}') AS evidence
          FROM labels l GROUP BY l.answer_set_id) c
    WHERE s.id = c.id AND (c.rationales::text <> '{}' OR c.evidence::text <> '{}');

-- +goose Down
-- Answer sets still waiting for their labels get them before the queue
-- goes.
INSERT INTO labels (answer_set_id, project_id, item_id, rater_id, rubric_version_id, rubric_item_key, value, rationale, evidence)
SELECT s.id, s.project_id, s.item_id, s.rater_id, s.rubric_version_id, a.key, a.value,
       coalesce(s.rationales ->> a.key, ''),
       coalesce(ARRAY(SELECT t::int FROM json_array_elements_text(s.evidence -> a.key) t), '{}')
FROM labels_pending p JOIN answer_sets s ON s.id = p.answer_set_id CROSS JOIN LATERAL json_each_text(s.answers) a
ON CONFLICT DO NOTHING;
DROP TABLE labels_pending;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION answer_sets_clear_answers() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE answer_sets SET answers = '{}' WHERE answers::text <> '{}';
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION answer_sets_copy_labels() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM answer_sets s
        WHERE s.id IN (SELECT answer_set_id FROM changed)
        ORDER BY s.id FOR NO KEY UPDATE;
    UPDATE answer_sets s
        SET answers = c.answers
        FROM (SELECT x.id,
                     coalesce(json_object_agg(l.rubric_item_key, l.value ORDER BY l.rubric_item_key)
                         FILTER (WHERE l.id IS NOT NULL), '{}') AS answers
              FROM (SELECT DISTINCT answer_set_id AS id FROM changed) x
              LEFT JOIN labels l ON l.answer_set_id = x.id
              GROUP BY x.id) c
        WHERE s.id = c.id AND s.answers::text IS DISTINCT FROM c.answers::text;
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

ALTER TABLE answer_sets DROP COLUMN evidence, DROP COLUMN rationales;
