-- Calibration: items of a project whose gold is known, served to its
-- annotators like any other item so that their answers can be held against
-- that gold. A calibration answer is kept apart from labels: it never counts
-- toward an item's overlap, its agreement or the report of real items.

-- +goose Up

-- The project's rules (package calibration decides with them):
-- calibration_qualify: calibration items a person must pass before real
-- items are served (0: no qualification); calibration_every: after
-- qualifying, one calibration item in that many items served (0: none);
-- calibration_pass: the percentage of rubric items an answer set must get
-- right, against the tolerance of each rubric item's kind, to pass.
ALTER TABLE projects
    ADD COLUMN calibration_qualify int NOT NULL DEFAULT 0 CHECK (calibration_qualify BETWEEN 0 AND 1000),
    ADD COLUMN calibration_every   int NOT NULL DEFAULT 0 CHECK (calibration_every = 0 OR calibration_every BETWEEN 2 AND 1000),
    ADD COLUMN calibration_pass    int NOT NULL DEFAULT 80 CHECK (calibration_pass BETWEEN 1 AND 100);

-- The calibration set: gold items a lead promoted, with what the lead
-- wants a person who missed a rubric item to read (rubric item → text).
CREATE TABLE calibration_items (
    item_id      bigint PRIMARY KEY,
    project_id   bigint NOT NULL,
    explanations jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(explanations) = 'object'),
    added_by     bigint REFERENCES users (id) ON DELETE SET NULL,
    added_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE
);
CREATE INDEX calibration_items_project_idx ON calibration_items (project_id, item_id);

-- A calibration item handed to a person is an assignment like any other
-- (the page, drafts, content notes and skips work the same), marked so
-- that it never takes a slot of the item's overlap; once submitted its
-- answers are a calibration answer, not an answer set. The one assignment
-- per person and item also means nobody is served a calibration item
-- twice, nor one they labelled for real.
ALTER TABLE assignments ADD COLUMN calibration boolean NOT NULL DEFAULT false,
    DROP CONSTRAINT assignments_submitted_has_answers,
    ADD CONSTRAINT assignments_submitted_has_answers CHECK (
        CASE WHEN calibration THEN answer_set_id IS NULL
             ELSE (state = 'submitted') = (answer_set_id IS NOT NULL) END);
CREATE INDEX assignments_calibration_idx ON assignments (rater_id, project_id, assigned_at) WHERE calibration;

-- One person's answers to one calibration item, graded when submitted
-- against the gold of that moment (kept here, since gold may later change):
-- matched of compared rubric items within their kind's tolerance, passed
-- against the project's mark, and per rubric item the given and gold
-- values. Rows are history and are not changed.
CREATE TABLE calibration_answers (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    assignment_id bigint NOT NULL UNIQUE REFERENCES assignments (id) ON DELETE CASCADE,
    project_id    bigint NOT NULL,
    item_id       bigint NOT NULL,
    rater_id      bigint NOT NULL REFERENCES raters (id),
    answers       jsonb NOT NULL CHECK (jsonb_typeof(answers) = 'object'),
    gold          jsonb NOT NULL CHECK (jsonb_typeof(gold) = 'object'),
    matched       int NOT NULL CHECK (matched >= 0),
    compared      int NOT NULL CHECK (compared >= matched),
    passed        boolean NOT NULL,
    active_ms     bigint NOT NULL DEFAULT 0 CHECK (active_ms >= 0),
    submitted_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (item_id, rater_id),
    FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE
);
CREATE INDEX calibration_answers_rater_idx ON calibration_answers (project_id, rater_id, submitted_at);
CREATE TRIGGER calibration_answers_immutable BEFORE UPDATE ON calibration_answers
    FOR EACH ROW EXECUTE FUNCTION refuse_change();

-- A lead may pause one annotator's queue (after a drift alert, say): they
-- are handed nothing until it is resumed, and told why.
ALTER TABLE project_members
    ADD COLUMN paused_at  timestamptz,
    ADD COLUMN paused_why text NOT NULL DEFAULT '' CHECK (char_length(paused_why) <= 500);

-- +goose Down
ALTER TABLE project_members DROP COLUMN paused_why, DROP COLUMN paused_at;
DROP TABLE calibration_answers;
DROP INDEX assignments_calibration_idx;
DELETE FROM assignments WHERE calibration;
ALTER TABLE assignments DROP CONSTRAINT assignments_submitted_has_answers,
    ADD CONSTRAINT assignments_submitted_has_answers CHECK ((state = 'submitted') = (answer_set_id IS NOT NULL)),
    DROP COLUMN calibration;
DROP TABLE calibration_items;
ALTER TABLE projects DROP COLUMN calibration_pass, DROP COLUMN calibration_every, DROP COLUMN calibration_qualify;
