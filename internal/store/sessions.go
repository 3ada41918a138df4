package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

// Session is a stored browser session: its data as the session manager
// encoded it, when it expires, and the account it is signed in as (nil
// when none, or when the account is gone).
type Session struct {
	Data   []byte
	Expiry time.Time
	User   *attune.User
}

// FindSession returns the unexpired session with the token, with its
// account, in one round trip; found is false when there is none.
func (db *DB) FindSession(ctx context.Context, token string) (s Session, found bool, err error) {
	b := &pgx.Batch{}
	b.Queue(`SELECT data, expiry FROM sessions WHERE token = $1 AND now() < expiry`, token)
	b.Queue(`SELECT `+userColumns+` FROM users WHERE id = (SELECT user_id FROM sessions WHERE token = $1 AND now() < expiry)`, token)
	br := db.pool.SendBatch(ctx, b)
	err = func() error {
		if err := br.QueryRow().Scan(&s.Data, &s.Expiry); err != nil {
			return err
		}
		found = true
		u, err := scanUser(br.QueryRow())
		switch {
		case err == nil:
			s.User = u
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		return nil
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return Session{}, false, nil
	}
	if err != nil {
		return Session{}, false, mapErr(err, "find session", "")
	}
	return s, found, nil
}

// SaveSession stores a session's data and expiry, and the account it is
// signed in as (0 for none).
func (db *DB) SaveSession(ctx context.Context, token string, data []byte, expiry time.Time, userID int64) error {
	var user *int64
	if userID != 0 {
		user = &userID
	}
	_, err := db.pool.Exec(ctx, `INSERT INTO sessions (token, data, expiry, user_id) VALUES ($1, $2, $3, $4)
		ON CONFLICT (token) DO UPDATE SET data = EXCLUDED.data, expiry = EXCLUDED.expiry, user_id = EXCLUDED.user_id`,
		token, data, expiry, user)
	return mapErr(err, "save session", "")
}

// DeleteSession removes a session; a token that has none is no error.
func (db *DB) DeleteSession(ctx context.Context, token string) error {
	_, err := db.pool.Exec(ctx, `DELETE FROM sessions WHERE token = $1`, token)
	return mapErr(err, "delete session", "")
}
