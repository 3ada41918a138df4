-- Gold sets: each project's consensus setting, where the consensus rule
-- last left each item (the queue of disagreements), and the history of
-- every adjudication.

-- +goose Up

-- The widest spread (largest minus smallest answer) of a numeric scale
-- within which the median of the human answers is the consensus.
ALTER TABLE projects ADD COLUMN gold_max_spread int NOT NULL DEFAULT 1 CHECK (gold_max_spread BETWEEN 0 AND 10);

-- A lead's note is a few sentences, not a document.
ALTER TABLE gold_labels ADD CONSTRAINT gold_labels_note_length CHECK (char_length(note) <= 2000);

-- The consensus rule's last verdict on each item with complete human
-- labels: decided (its gold is automatic), or not and why, with the rank
-- that orders the queue (the widest spread of the human answers, 0 to 1,
-- plus 100 when some rater shows a safety concern). computed_at tells which
-- items got answers since; max_spread, which were judged under another
-- setting.
CREATE TABLE gold_consensus (
    item_id      bigint PRIMARY KEY,
    project_id   bigint NOT NULL,
    decided      boolean NOT NULL,
    rank         double precision NOT NULL CHECK (rank >= 0),
    safety       boolean NOT NULL,
    reason       text NOT NULL DEFAULT '',
    human_raters int NOT NULL CHECK (human_raters >= 0),
    max_spread   int NOT NULL,
    computed_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE
);
CREATE INDEX gold_consensus_queue_idx ON gold_consensus (project_id, rank DESC, item_id) WHERE NOT decided;

-- Every adjudication, kept whole: the answers set, the gold they replaced
-- (rubric item → {value, method}), the rubric items where the lead took the
-- consensus, and the note. gold_labels holds only the latest.
CREATE TABLE adjudications (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id bigint NOT NULL,
    item_id    bigint NOT NULL,
    decided_by bigint NOT NULL REFERENCES users (id),
    answers    jsonb NOT NULL CHECK (jsonb_typeof(answers) = 'object'),
    previous   jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(previous) = 'object'),
    accepted   text[] NOT NULL DEFAULT '{}',
    note       text NOT NULL DEFAULT '' CHECK (char_length(note) <= 2000),
    decided_at timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE
);
CREATE INDEX adjudications_item_idx ON adjudications (item_id, decided_at);

-- History is not rewritten (an item's removal still takes its history).
CREATE TRIGGER adjudications_immutable BEFORE UPDATE ON adjudications
    FOR EACH ROW EXECUTE FUNCTION refuse_change();

-- +goose Down
DROP TABLE adjudications;
DROP TABLE gold_consensus;
ALTER TABLE gold_labels DROP CONSTRAINT gold_labels_note_length;
ALTER TABLE projects DROP COLUMN gold_max_spread;
