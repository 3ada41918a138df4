-- LLM judges: runs, every call made, and how each judge label was reached.

-- +goose Up

-- A run is one judge over one project, worked as durable jobs by any
-- replica. Its settings are a snapshot taken when it was created, so a
-- later edit of the judge does not change what a run means.
CREATE TABLE judge_runs (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    judge_id       bigint NOT NULL REFERENCES judges (id),
    project_id     bigint NOT NULL REFERENCES projects (id),
    status         text NOT NULL DEFAULT 'queued'
                   CHECK (status IN ('queued', 'running', 'paused', 'cancelled', 'completed')),
    reason         text NOT NULL DEFAULT '',
    item_limit     int CHECK (item_limit > 0),
    budget_usd     numeric(14, 6) CHECK (budget_usd >= 0),
    estimate_usd   numeric(14, 6) NOT NULL DEFAULT 0,
    spent_usd      numeric(14, 6) NOT NULL DEFAULT 0,
    items_total    int NOT NULL DEFAULT 0 CHECK (items_total >= 0),
    -- Items of the run's scope the judge has answered, kept by the workers
    -- so that finding the end of a run costs no scan per item.
    items_done     int NOT NULL DEFAULT 0 CHECK (items_done >= 0),
    capabilities   jsonb NOT NULL DEFAULT '{}',
    settings       jsonb NOT NULL,
    generation     int NOT NULL DEFAULT 1,
    created_by     bigint REFERENCES users (id),
    created_at     timestamptz NOT NULL DEFAULT now(),
    started_at     timestamptz,
    finished_at    timestamptz
);
CREATE INDEX judge_runs_project_idx ON judge_runs (project_id, created_at DESC);

-- Every call to a provider that returned, with what it cost. A valid
-- answer is found again by its cache key (endpoint, model, settings,
-- sample number and prompt hash), so it is never paid for twice.
CREATE TABLE judge_calls (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id          bigint NOT NULL REFERENCES judge_runs (id) ON DELETE CASCADE,
    judge_id        bigint NOT NULL REFERENCES judges (id),
    item_id         bigint NOT NULL REFERENCES items (id) ON DELETE CASCADE,
    rubric_item_key text NOT NULL,
    sample          int NOT NULL DEFAULT 0 CHECK (sample >= 0),
    reask           boolean NOT NULL DEFAULT false,
    cache_key       text NOT NULL CHECK (cache_key ~ '^[0-9a-f]{64}$'),
    prompt_hash     text NOT NULL,
    model           text NOT NULL,
    ok              boolean NOT NULL,
    raw             text NOT NULL DEFAULT '',
    -- The whole response as the runner reads it back from the cache; text,
    -- not jsonb: it is stored on the hot path and never queried inside.
    response        text NOT NULL DEFAULT '',
    error           text NOT NULL DEFAULT '',
    input_tokens    int NOT NULL DEFAULT 0,
    cached_tokens   int NOT NULL DEFAULT 0,
    output_tokens   int NOT NULL DEFAULT 0,
    cost_usd        numeric(14, 8) NOT NULL DEFAULT 0,
    latency_ms      int NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX judge_calls_cache_idx ON judge_calls (cache_key) WHERE ok;
CREATE INDEX judge_calls_run_idx ON judge_calls (run_id, rubric_item_key);
CREATE INDEX judge_calls_item_idx ON judge_calls (item_id);

-- Request and token pacing per judge, shared by every replica: the next
-- free start time for a request and for a token (a generic cell rate
-- scheme), so a judge's requests-per-minute and tokens-per-minute limits
-- hold across all workers.
CREATE TABLE judge_pacing (
    judge_id      bigint PRIMARY KEY REFERENCES judges (id) ON DELETE CASCADE,
    next_request  timestamptz NOT NULL DEFAULT now(),
    next_token    timestamptz NOT NULL DEFAULT now()
);

-- How a judge's label was reached: the method (structured, parsed,
-- tolerant, logprob, sampled, error), the prompt hash, and for log-
-- probabilities or samples the weighted score, distribution and spread.
CREATE TABLE judge_label_details (
    label_id        bigint PRIMARY KEY REFERENCES labels (id) ON DELETE CASCADE,
    run_id          bigint NOT NULL REFERENCES judge_runs (id) ON DELETE CASCADE,
    method          text NOT NULL,
    prompt_hash     text NOT NULL,
    weighted_score  double precision,
    distribution    jsonb,
    samples         jsonb,
    spread          double precision,
    raw             text NOT NULL DEFAULT ''
);
CREATE INDEX judge_label_details_run_idx ON judge_label_details (run_id);

-- +goose Down
DROP TABLE judge_pacing;
DROP TABLE judge_label_details;
DROP TABLE judge_calls;
DROP TABLE judge_runs;
