-- Sign-in hardening.
--
-- session_epoch ends every session of an account at once: a session keeps
-- the epoch its account had at sign-in and stops working when the account's
-- moves on (a password change or reset). Sessions are opaque blobs in the
-- session table, so they cannot be found by account any other way.
--
-- cleared_at marks failed sign-ins an admin's password reset forgave: they
-- no longer lock the account, but stay on record (and still count against
-- the client address they came from).

-- +goose Up
ALTER TABLE users ADD COLUMN session_epoch bigint NOT NULL DEFAULT 0;
ALTER TABLE sign_in_attempts ADD COLUMN cleared_at timestamptz;

-- +goose Down
ALTER TABLE sign_in_attempts DROP COLUMN cleared_at;
ALTER TABLE users DROP COLUMN session_epoch;
