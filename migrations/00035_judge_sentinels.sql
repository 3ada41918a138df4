-- Judge sentinels: every run of a judge also asks it the project's
-- calibration items, afresh (never from the answer cache), and keeps its
-- answers here beside the gold of that moment. One row per run and item:
-- the series of a judge's accuracy on the same items, run after run, in
-- which a provider's silent change of model shows as a step. These are
-- not labels: they never count as the judge's answers to the items.

-- +goose Up
CREATE TABLE judge_sentinels (
    run_id      bigint NOT NULL REFERENCES judge_runs (id) ON DELETE CASCADE,
    item_id     bigint NOT NULL,
    project_id  bigint NOT NULL,
    rater_id    bigint NOT NULL REFERENCES raters (id),
    answers     jsonb NOT NULL CHECK (jsonb_typeof(answers) = 'object'),
    gold        jsonb NOT NULL CHECK (jsonb_typeof(gold) = 'object'),
    answered_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, item_id),
    FOREIGN KEY (item_id, project_id) REFERENCES items (id, project_id) ON DELETE CASCADE
);
CREATE INDEX judge_sentinels_project_idx ON judge_sentinels (project_id, rater_id, answered_at);

-- +goose Down
DROP TABLE judge_sentinels;
