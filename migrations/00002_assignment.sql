-- Work distribution and API access.

-- +goose Up

-- Counters kept in the same transactions that change assignments and
-- answer sets, so that choosing the next item reads one index instead of
-- counting labels: done = submitted human answer sets; holds = assignments
-- still active (an expired lease counts until it is reclaimed).
ALTER TABLE items
    ADD COLUMN done  int NOT NULL DEFAULT 0 CHECK (done >= 0),
    ADD COLUMN holds int NOT NULL DEFAULT 0 CHECK (holds >= 0);
CREATE INDEX items_next_idx ON items (project_id, (done + holds) DESC, id);

-- Why an annotator skipped or flagged an item.
ALTER TABLE assignments
    ADD COLUMN flag      text CHECK (flag IN ('broken', 'off-topic', 'distressing', 'other')),
    ADD COLUMN flag_note text NOT NULL DEFAULT '',
    ADD COLUMN answer_set_id bigint REFERENCES answer_sets (id) ON DELETE SET NULL,
    ADD CONSTRAINT assignments_submitted_has_answers CHECK ((state = 'submitted') = (answer_set_id IS NOT NULL));

-- When the answer set was first submitted; active_ms is the time spent.
ALTER TABLE answer_sets ADD COLUMN submitted_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX answer_sets_submitted_idx ON answer_sets (project_id, submitted_at);

-- Personal API tokens. Only a SHA-256 of the token is kept; the token is
-- shown once at creation.
CREATE TABLE api_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id),
    name         text NOT NULL DEFAULT '',
    token_sha256 bytea NOT NULL UNIQUE CHECK (length(token_sha256) = 32),
    prefix       text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id);

-- +goose Down
DROP TABLE api_tokens;
DROP INDEX answer_sets_submitted_idx;
ALTER TABLE answer_sets DROP COLUMN submitted_at;
ALTER TABLE assignments DROP CONSTRAINT assignments_submitted_has_answers,
    DROP COLUMN answer_set_id, DROP COLUMN flag_note, DROP COLUMN flag;
DROP INDEX items_next_idx;
ALTER TABLE items DROP COLUMN holds, DROP COLUMN done;
