-- Trust or escalate. A lead may let one judge of a project label alone
-- the items on which its agreement with people is guaranteed
-- (agreement.CalibrateTrust): judge_trust holds the lead's terms per
-- project and judge (the target agreement and the guarantee's error
-- level) and whether routing is on; at most one judge of a project is on
-- at a time, so that an item's decided value never depends on which of
-- two judges went first. The terms' rule is agreement.TrustOptions.Check;
-- the database holds their range.
--
-- trust_routes is where routing left each item the judge answered and no
-- person has: kept (the judge's answers are its gold, method
-- trusted_judge) or escalated to people's queue, and why. held says that
-- routing itself held the item back from people's queues (a kept item
-- of a project without drawn queues), so that turning routing off or
-- escalating the item later gives it back and nothing else.
--
-- item_gold (00039) learns whether an item's gold is the trusted judge's,
-- so that the dataset export, which reads only the copy, can say so.

-- +goose Up
CREATE TABLE judge_trust (
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    rater_id   bigint NOT NULL REFERENCES raters (id) ON DELETE CASCADE,
    target     double precision NOT NULL CHECK (target > 0 AND target < 1),
    alpha      double precision NOT NULL CHECK (alpha > 0 AND alpha < 1),
    enabled    boolean NOT NULL DEFAULT false,
    updated_by bigint REFERENCES users (id) ON DELETE SET NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    -- When routing last ran; NULL until it has.
    routed_at  timestamptz,
    PRIMARY KEY (project_id, rater_id)
);
CREATE UNIQUE INDEX judge_trust_one_on ON judge_trust (project_id) WHERE enabled;

CREATE TABLE trust_routes (
    item_id    bigint PRIMARY KEY,
    project_id bigint NOT NULL,
    rater_id   bigint NOT NULL REFERENCES raters (id) ON DELETE CASCADE,
    decision   text NOT NULL CHECK (decision IN ('kept', 'escalated')),
    reason     text NOT NULL CHECK (char_length(reason) <= 2000),
    held       boolean NOT NULL DEFAULT false CHECK (decision = 'kept' OR NOT held),
    decided_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE
);
CREATE INDEX trust_routes_project_idx ON trust_routes (project_id, decision, item_id);

ALTER TABLE gold_labels DROP CONSTRAINT gold_labels_method_check;
ALTER TABLE gold_labels DROP CONSTRAINT gold_labels_check;
ALTER TABLE gold_labels ADD CONSTRAINT gold_labels_method_check
    CHECK (method IN ('automatic', 'adjudicated', 'trusted_judge'));
ALTER TABLE gold_labels ADD CONSTRAINT gold_labels_check
    CHECK (method <> 'adjudicated' OR decided_by IS NOT NULL);

ALTER TABLE item_gold ADD COLUMN trusted boolean NOT NULL DEFAULT false;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION item_gold_copy() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- As in 00039, with trusted: every rubric item's gold is the
    -- trusted judge's.
    INSERT INTO item_gold (item_id, project_id, gold, adjudicated)
        SELECT c.item_id, min(c.project_id), '{}', false FROM changed c
        WHERE EXISTS (SELECT 1 FROM gold_labels l WHERE l.item_id = c.item_id)
        GROUP BY c.item_id ORDER BY c.item_id
        ON CONFLICT (item_id) DO NOTHING;
    PERFORM 1 FROM item_gold g
        WHERE g.item_id IN (SELECT item_id FROM changed)
        ORDER BY g.item_id FOR NO KEY UPDATE;
    DELETE FROM item_gold g
        WHERE g.item_id IN (SELECT item_id FROM changed)
          AND NOT EXISTS (SELECT 1 FROM gold_labels l WHERE l.item_id = g.item_id);
    UPDATE item_gold g
        SET gold = c.gold, adjudicated = c.adjudicated, trusted = c.trusted
        FROM (SELECT l.item_id,
                     json_object_agg(l.rubric_item_key, l.value ORDER BY l.rubric_item_key) AS gold,
                     bool_or(l.method = 'adjudicated') AS adjudicated,
                     bool_and(l.method = 'trusted_judge') AS trusted
              FROM gold_labels l
              WHERE l.item_id IN (SELECT item_id FROM changed)
              GROUP BY l.item_id) c
        WHERE g.item_id = c.item_id
          AND (g.gold::text, g.adjudicated, g.trusted) IS DISTINCT FROM (c.gold::text, c.adjudicated, c.trusted);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION item_gold_copy() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO item_gold (item_id, project_id, gold, adjudicated)
        SELECT c.item_id, min(c.project_id), '{}', false FROM changed c
        WHERE EXISTS (SELECT 1 FROM gold_labels l WHERE l.item_id = c.item_id)
        GROUP BY c.item_id ORDER BY c.item_id
        ON CONFLICT (item_id) DO NOTHING;
    PERFORM 1 FROM item_gold g
        WHERE g.item_id IN (SELECT item_id FROM changed)
        ORDER BY g.item_id FOR NO KEY UPDATE;
    DELETE FROM item_gold g
        WHERE g.item_id IN (SELECT item_id FROM changed)
          AND NOT EXISTS (SELECT 1 FROM gold_labels l WHERE l.item_id = g.item_id);
    UPDATE item_gold g
        SET gold = c.gold, adjudicated = c.adjudicated
        FROM (SELECT l.item_id,
                     json_object_agg(l.rubric_item_key, l.value ORDER BY l.rubric_item_key) AS gold,
                     bool_or(l.method = 'adjudicated') AS adjudicated
              FROM gold_labels l
              WHERE l.item_id IN (SELECT item_id FROM changed)
              GROUP BY l.item_id) c
        WHERE g.item_id = c.item_id
          AND (g.gold::text, g.adjudicated) IS DISTINCT FROM (c.gold::text, c.adjudicated);
    RETURN NULL;
END;
$$;
-- +goose StatementEnd
ALTER TABLE item_gold DROP COLUMN trusted;
DELETE FROM gold_labels WHERE method = 'trusted_judge';
ALTER TABLE gold_labels DROP CONSTRAINT gold_labels_check;
ALTER TABLE gold_labels DROP CONSTRAINT gold_labels_method_check;
ALTER TABLE gold_labels ADD CONSTRAINT gold_labels_method_check CHECK (method IN ('automatic', 'adjudicated'));
ALTER TABLE gold_labels ADD CONSTRAINT gold_labels_check CHECK (method = 'automatic' OR decided_by IS NOT NULL);
DROP TABLE trust_routes;
DROP TABLE judge_trust;
