-- Re-qualification: a lead can let a person who failed the practice items
-- (or whose work drifted) qualify again. Each try is an attempt, counted
-- on the membership; a calibration assignment and its answer carry the
-- attempt they were given in. Qualification counts the answers of the
-- person's current attempt only, and the same calibration items can be
-- served again in a new attempt, while every earlier answer stays for the
-- record (and for the drift charts, which read the whole history).

-- +goose Up
ALTER TABLE project_members
    ADD COLUMN calibration_attempt int NOT NULL DEFAULT 1 CHECK (calibration_attempt >= 1);

-- A real item is still given to a person once, ever (the claim checks
-- every attempt); only a calibration item is given again, once per attempt.
ALTER TABLE assignments
    ADD COLUMN calibration_attempt int NOT NULL DEFAULT 1 CHECK (calibration_attempt >= 1),
    DROP CONSTRAINT assignments_item_id_rater_id_key,
    ADD CONSTRAINT assignments_item_rater_attempt_key UNIQUE (item_id, rater_id, calibration_attempt);

ALTER TABLE calibration_answers
    ADD COLUMN calibration_attempt int NOT NULL DEFAULT 1 CHECK (calibration_attempt >= 1),
    DROP CONSTRAINT calibration_answers_item_id_rater_id_key,
    ADD CONSTRAINT calibration_answers_item_rater_attempt_key UNIQUE (item_id, rater_id, calibration_attempt);

-- +goose Down
-- One assignment and one answer per person and item again: of each
-- person's calibration assignments only those of their current attempt are
-- kept (the latest, for someone no longer a member), so that where they
-- stand with qualification stays what it was. The answers of earlier
-- attempts go with their assignments.
DELETE FROM assignments a
    WHERE a.calibration AND a.calibration_attempt <> coalesce(
        (SELECT m.calibration_attempt FROM project_members m JOIN raters r ON r.user_id = m.user_id
         WHERE r.id = a.rater_id AND m.project_id = a.project_id),
        (SELECT max(b.calibration_attempt) FROM assignments b
         WHERE b.rater_id = a.rater_id AND b.project_id = a.project_id AND b.calibration));
ALTER TABLE calibration_answers
    DROP CONSTRAINT calibration_answers_item_rater_attempt_key,
    ADD CONSTRAINT calibration_answers_item_id_rater_id_key UNIQUE (item_id, rater_id),
    DROP COLUMN calibration_attempt;
ALTER TABLE assignments
    DROP CONSTRAINT assignments_item_rater_attempt_key,
    ADD CONSTRAINT assignments_item_id_rater_id_key UNIQUE (item_id, rater_id),
    DROP COLUMN calibration_attempt;
ALTER TABLE project_members DROP COLUMN calibration_attempt;
