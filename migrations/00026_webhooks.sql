-- A project's webhooks tell a URL of the lead's choosing what happened in
-- the project. The secret signs every delivery, so the receiver can tell a
-- delivery from a forgery; attune must read it back to sign, so it is
-- stored as it is, shown once when the webhook is made and never again.
-- A delivery is one event for one webhook, queued in the transaction of the
-- change it announces; each try at sending it is an attempt, kept so a lead
-- can see what the receiver answered.

-- +goose Up
CREATE TABLE webhooks (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    url         text NOT NULL CHECK (url ~ '^https?://'),
    events      text[] NOT NULL CHECK (cardinality(events) > 0),
    secret      text NOT NULL CHECK (length(secret) >= 32),
    enabled     boolean NOT NULL DEFAULT true,
    created_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_project_idx ON webhooks (project_id);

CREATE TABLE webhook_deliveries (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    webhook_id  bigint NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    uuid        uuid NOT NULL UNIQUE DEFAULT gen_random_uuid(),
    event       text NOT NULL,
    body        jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- state: queued until an attempt succeeds (delivered) or the last
    -- attempt fails (failed).
    state       text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'delivered', 'failed'))
);
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id, id DESC);

CREATE TABLE webhook_attempts (
    delivery_id bigint NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    attempt     int NOT NULL CHECK (attempt > 0),
    started_at  timestamptz NOT NULL,
    latency_ms  int NOT NULL CHECK (latency_ms >= 0),
    status      int,  -- the receiver's HTTP status; null when none answered
    error       text NOT NULL DEFAULT '',
    response    text NOT NULL DEFAULT '',  -- the start of the receiver's answer
    PRIMARY KEY (delivery_id, attempt)
);

-- +goose Down
DROP TABLE webhook_attempts;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
