-- The consensus rule records whether some rater answered NA on an item
-- that applies only with crisis signals although the item's facts point
-- at them, so that the queue can rank such items right after safety
-- failures and show why. Verdicts computed before are judged again when
-- their answers change or the rule is run with --all.

-- +goose Up
ALTER TABLE gold_consensus ADD COLUMN signal boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE gold_consensus DROP COLUMN signal;
