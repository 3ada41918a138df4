-- The whole product's schema. Later migrations extend it; they should not
-- need to reshape it. Constraints carry the invariants so that no code path,
-- present or future, can store an impossible state.

-- +goose Up

-- Accounts. Emails are stored lower-cased so that uniqueness is
-- case-insensitive without an extension.
CREATE TABLE users (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email         text NOT NULL UNIQUE CHECK (email = lower(email) AND email LIKE '%_@_%'),
    name          text NOT NULL DEFAULT '',
    role          text NOT NULL CHECK (role IN ('admin', 'lead', 'annotator')),
    password_hash text NOT NULL CHECK (password_hash <> ''),
    disabled_at   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);

-- Sessions, in the shape the session manager's PostgreSQL store expects.
CREATE TABLE sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

-- Every sign-in attempt, so that rate limits hold across app replicas.
CREATE TABLE sign_in_attempts (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    email        text NOT NULL,
    address      text NOT NULL,
    succeeded    boolean NOT NULL,
    attempted_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sign_in_attempts_email_idx ON sign_in_attempts (email, attempted_at) WHERE NOT succeeded;
CREATE INDEX sign_in_attempts_address_idx ON sign_in_attempts (address, attempted_at) WHERE NOT succeeded;

-- Rubric versions are data. A version is immutable: its definition and
-- hash can never be updated, and labels pin the version they were made with.
CREATE TABLE rubric_versions (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    key        text NOT NULL CHECK (key ~ '^[a-z0-9][a-z0-9-]*$'),
    version    text NOT NULL CHECK (version ~ '^[0-9A-Za-z][0-9A-Za-z.-]*$'),
    kind       text NOT NULL CHECK (kind IN ('likert', 'criteria', 'single')),
    title      text NOT NULL,
    definition jsonb NOT NULL,
    sha256     text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    builtin    boolean NOT NULL DEFAULT false,
    created_by bigint REFERENCES users (id),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (key, version)
);

-- The items (dimensions or criteria) of a rubric version and the answers
-- each allows, so that a label or gold value outside the rubric cannot be
-- stored at all (foreign keys below).
CREATE TABLE rubric_items (
    rubric_version_id bigint NOT NULL REFERENCES rubric_versions (id),
    key               text NOT NULL CHECK (key <> ''),
    position          int NOT NULL CHECK (position >= 0),
    PRIMARY KEY (rubric_version_id, key),
    UNIQUE (rubric_version_id, position)
);

CREATE TABLE rubric_answers (
    rubric_version_id bigint NOT NULL,
    item_key          text NOT NULL,
    value             text NOT NULL CHECK (value <> ''),
    PRIMARY KEY (rubric_version_id, item_key, value),
    FOREIGN KEY (rubric_version_id, item_key) REFERENCES rubric_items (rubric_version_id, key)
);

-- +goose StatementBegin
CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is immutable: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER rubric_versions_immutable BEFORE UPDATE ON rubric_versions
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER rubric_items_immutable BEFORE UPDATE ON rubric_items
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER rubric_answers_immutable BEFORE UPDATE ON rubric_answers
    FOR EACH ROW EXECUTE FUNCTION refuse_change();

-- Projects pair a dataset with one rubric version for their whole life.
CREATE TABLE projects (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name              text NOT NULL UNIQUE CHECK (btrim(name) <> ''),
    instructions      text NOT NULL DEFAULT '',
    rubric_version_id bigint NOT NULL REFERENCES rubric_versions (id),
    overlap           int NOT NULL CHECK (overlap BETWEEN 1 AND 10),
    lease_seconds     int NOT NULL DEFAULT 1800 CHECK (lease_seconds > 0),
    status            text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'paused', 'archived')),
    created_by        bigint REFERENCES users (id),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    -- Target of composite keys that pin answer sets to the project's version.
    UNIQUE (id, rubric_version_id)
);

CREATE TABLE project_members (
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    bigint NOT NULL REFERENCES users (id),
    role       text NOT NULL CHECK (role IN ('lead', 'annotator')),
    added_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, user_id)
);
CREATE INDEX project_members_user_idx ON project_members (user_id);

-- Items: one reply to one disclosure, or a whole conversation. Messages are
-- an array of {"role", "content"} objects in dialogue order.
CREATE TABLE items (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    source_id  text NOT NULL CHECK (source_id <> ''),
    kind       text NOT NULL CHECK (kind IN ('reply', 'conversation')),
    messages   jsonb NOT NULL CHECK (jsonb_typeof(messages) = 'array' AND jsonb_array_length(messages) > 0),
    meta       jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(meta) = 'object'),
    turns      int NOT NULL CHECK (turns >= 0),
    sha256     text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (project_id, source_id),
    UNIQUE (id, project_id)
);

-- Judges: a model with its settings. The API key itself is never stored,
-- only the name of the environment variable that holds it.
CREATE TABLE judges (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (btrim(name) <> ''),
    provider    text NOT NULL CHECK (provider IN ('openai', 'anthropic')),
    base_url    text NOT NULL DEFAULT '',
    model       text NOT NULL CHECK (model <> ''),
    api_key_env text NOT NULL DEFAULT '' CHECK (api_key_env ~ '^[A-Za-z_][A-Za-z0-9_]*$' OR api_key_env = ''),
    settings    jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(settings) = 'object'),
    created_by  bigint REFERENCES users (id),
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Raters: a person or a judge, one table, so that labels, scores and
-- agreement treat a judge as simply one more rater.
CREATE TABLE raters (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('human', 'judge')),
    user_id    bigint UNIQUE REFERENCES users (id),
    judge_id   bigint UNIQUE REFERENCES judges (id),
    -- Raters brought in with imported labels have a name but no account.
    name       text NOT NULL CHECK (btrim(name) <> ''),
    created_at timestamptz NOT NULL DEFAULT now(),
    CHECK ((kind = 'human' AND judge_id IS NULL) OR (kind = 'judge' AND user_id IS NULL AND judge_id IS NOT NULL))
);

-- Assignments: an item handed to a human rater. One per rater and item,
-- ever: nobody is given the same item twice.
CREATE TABLE assignments (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id       bigint NOT NULL,
    item_id          bigint NOT NULL,
    rater_id         bigint NOT NULL REFERENCES raters (id),
    state            text NOT NULL DEFAULT 'active' CHECK (state IN ('active', 'submitted', 'skipped', 'expired')),
    assigned_at      timestamptz NOT NULL DEFAULT now(),
    lease_expires_at timestamptz NOT NULL,
    finished_at      timestamptz,
    UNIQUE (item_id, rater_id),
    FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE,
    CHECK ((state = 'active') = (finished_at IS NULL)),
    CHECK (lease_expires_at > assigned_at)
);
CREATE INDEX assignments_active_idx ON assignments (project_id, lease_expires_at) WHERE state = 'active';
CREATE INDEX assignments_rater_idx ON assignments (rater_id, project_id);

-- Answer sets: one rater's answers for one item, pinned to the project's
-- rubric version. Humans and judges are stored the same way.
CREATE TABLE answer_sets (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id        bigint NOT NULL,
    item_id           bigint NOT NULL,
    rater_id          bigint NOT NULL REFERENCES raters (id),
    rubric_version_id bigint NOT NULL,
    rationale         text NOT NULL DEFAULT '',
    active_ms         bigint NOT NULL DEFAULT 0 CHECK (active_ms >= 0),
    revision          int NOT NULL DEFAULT 1 CHECK (revision >= 1),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (item_id, rater_id),
    UNIQUE (id, item_id, rater_id, rubric_version_id),
    FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE,
    FOREIGN KEY (project_id, rubric_version_id) REFERENCES projects (id, rubric_version_id)
);
CREATE INDEX answer_sets_rater_idx ON answer_sets (rater_id, project_id);
CREATE INDEX answer_sets_project_idx ON answer_sets (project_id, item_id);

-- Labels: one value per rater × item × rubric item. The composite keys make
-- a label that disagrees with its answer set, or a value the rubric does not
-- allow, impossible to store.
CREATE TABLE labels (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    answer_set_id     bigint NOT NULL,
    item_id           bigint NOT NULL,
    rater_id          bigint NOT NULL,
    rubric_version_id bigint NOT NULL,
    rubric_item_key   text NOT NULL,
    value             text NOT NULL,
    rationale         text NOT NULL DEFAULT '',
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (answer_set_id, rubric_item_key),
    UNIQUE (item_id, rater_id, rubric_item_key),
    FOREIGN KEY (answer_set_id, item_id, rater_id, rubric_version_id)
        REFERENCES answer_sets (id, item_id, rater_id, rubric_version_id) ON DELETE CASCADE,
    FOREIGN KEY (rubric_version_id, rubric_item_key, value)
        REFERENCES rubric_answers (rubric_version_id, item_key, value)
);
CREATE INDEX labels_rubric_item_idx ON labels (rubric_version_id, rubric_item_key);

-- Edit history: every replaced value or rationale, written by the database
-- itself so that no code path can edit a label without leaving a trace.
CREATE TABLE label_history (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    label_id    bigint NOT NULL REFERENCES labels (id) ON DELETE CASCADE,
    value       text NOT NULL,
    rationale   text NOT NULL,
    valid_from  timestamptz NOT NULL,
    replaced_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX label_history_label_idx ON label_history (label_id);

-- +goose StatementBegin
CREATE FUNCTION keep_label_history() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.item_id <> OLD.item_id OR NEW.rater_id <> OLD.rater_id
       OR NEW.rubric_item_key <> OLD.rubric_item_key OR NEW.answer_set_id <> OLD.answer_set_id THEN
        RAISE EXCEPTION 'a label cannot move to another item, rater or rubric item'
            USING ERRCODE = 'restrict_violation';
    END IF;
    IF NEW.value IS DISTINCT FROM OLD.value OR NEW.rationale IS DISTINCT FROM OLD.rationale THEN
        INSERT INTO label_history (label_id, value, rationale, valid_from)
        VALUES (OLD.id, OLD.value, OLD.rationale, OLD.updated_at);
        NEW.updated_at := now();
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER labels_history BEFORE UPDATE ON labels
    FOR EACH ROW EXECUTE FUNCTION keep_label_history();

-- Gold labels: the settled answer per item and rubric item, set by a
-- stated rule (automatic) or by a person (adjudicated).
CREATE TABLE gold_labels (
    item_id           bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    rubric_version_id bigint NOT NULL,
    rubric_item_key   text NOT NULL,
    value             text NOT NULL,
    method            text NOT NULL CHECK (method IN ('automatic', 'adjudicated')),
    decided_by        bigint REFERENCES users (id),
    note              text NOT NULL DEFAULT '',
    decided_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (item_id, rubric_item_key),
    FOREIGN KEY (rubric_version_id, rubric_item_key, value)
        REFERENCES rubric_answers (rubric_version_id, item_key, value),
    CHECK (method = 'automatic' OR decided_by IS NOT NULL)
);

-- The audit log is append-only.
CREATE TABLE audit_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    occurred_at timestamptz NOT NULL DEFAULT now(),
    actor_id    bigint REFERENCES users (id),
    action      text NOT NULL CHECK (action ~ '^[a-z_]+(\.[a-z_]+)+$'),
    project_id  bigint REFERENCES projects (id),
    subject     text NOT NULL DEFAULT '',
    details     jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object')
);
CREATE INDEX audit_events_project_idx ON audit_events (project_id, occurred_at);

CREATE TRIGGER audit_events_append_only BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION refuse_change();

-- +goose Down
DROP TABLE audit_events;
DROP TABLE gold_labels;
DROP TABLE label_history;
DROP TABLE labels;
DROP FUNCTION keep_label_history();
DROP TABLE answer_sets;
DROP TABLE assignments;
DROP TABLE raters;
DROP TABLE judges;
DROP TABLE items;
DROP TABLE project_members;
DROP TABLE projects;
DROP TABLE rubric_answers;
DROP TABLE rubric_items;
DROP TABLE rubric_versions;
DROP FUNCTION refuse_change();
DROP TABLE sign_in_attempts;
DROP TABLE sessions;
DROP TABLE users;
