-- Sign-in limits that count only what was decided.
--
-- pending marks an attempt whose password is being checked: it is neither
-- a failure nor a success yet. The limits refuse a check when failures and
-- checks under way together would pass them (so guesses sent at once
-- cannot slip past), but only failures lock an account, so right
-- passwords sent at once are told "busy, try again", never "too many
-- failures". A pending row left by a process that died is ignored after a
-- few minutes. An attempt whose password was never checked (its client
-- left while it waited) is deleted.
--
-- cleared_at now also marks failures forgiven by a successful sign-in, any
-- password change, or an admin clearing the lock.

-- +goose Up
ALTER TABLE sign_in_attempts ADD COLUMN pending boolean NOT NULL DEFAULT false;

-- +goose Down
-- The old rule would read a pending attempt as a failure.
DELETE FROM sign_in_attempts WHERE pending;
ALTER TABLE sign_in_attempts DROP COLUMN pending;
