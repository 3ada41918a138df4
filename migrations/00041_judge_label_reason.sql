-- Why a judge's answer is ERROR: the call failed, the reply held no
-- readable answer, or its answer broke a rule the rubric sets for the
-- dialogue (NA on a criterion that applies). The reason is kept with the
-- answer, so the lead reads it where the ERROR is shown; '' for an answer
-- that is not ERROR, and for ERRORs recorded before reasons were kept.

-- +goose Up
ALTER TABLE judge_label_details ADD COLUMN reason text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE judge_label_details DROP COLUMN reason;
