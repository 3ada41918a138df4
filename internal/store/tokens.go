package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
)

// tokenPrefix marks attune API tokens, so that secret scanners and people
// recognise one.
const tokenPrefix = "att_"

// APIToken is a personal API token as lists show it; the secret is never
// stored and shown only when created.
type APIToken struct {
	ID         int64
	Name       string
	Prefix     string // the first characters, to tell tokens apart
	CreatedAt  time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
	// ReadOnly tokens may only read: the API refuses them any method
	// but GET.
	ReadOnly bool
}

func hashToken(token string) []byte {
	sum := sha256.Sum256([]byte(token))
	return sum[:]
}

// CreateAPIToken makes a new API token for the user, limited to reading
// when readOnly, and returns it in the clear, once: only its SHA-256 is
// stored.
func (db *DB) CreateAPIToken(ctx context.Context, actorID *int64, userID int64, name string, readOnly bool) (string, *APIToken, error) {
	if err := attune.CheckText("name", name); err != nil {
		return "", nil, err
	}
	var b [30]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, err
	}
	token := tokenPrefix + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
	t := &APIToken{Name: name, Prefix: token[:len(tokenPrefix)+6], ReadOnly: readOnly}
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var email string
		if err := tx.QueryRow(ctx, `SELECT email FROM users WHERE id = $1`, userID).Scan(&email); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO api_tokens (user_id, name, token_sha256, prefix, read_only) VALUES ($1, $2, $3, $4, $5) RETURNING id, created_at`,
			userID, name, hashToken(token), t.Prefix, readOnly).Scan(&t.ID, &t.CreatedAt); err != nil {
			return err
		}
		details := map[string]string{"name": name, "prefix": t.Prefix}
		if readOnly {
			details["read_only"] = "true"
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "token.create", Subject: email, Details: details})
	})
	if err != nil {
		return "", nil, mapErr(err, "create API token", "")
	}
	return token, t, nil
}

// UserByAPIToken returns the enabled user a live token belongs to, and
// whether the token is limited to reading, and records its use. An
// unknown, revoked or malformed token, or one of a disabled account, is
// attune.ErrUnauthorized.
func (db *DB) UserByAPIToken(ctx context.Context, token string) (u *attune.User, readOnly bool, err error) {
	if !strings.HasPrefix(token, tokenPrefix) || len(token) > 200 {
		return nil, false, attune.ErrUnauthorized
	}
	u, err = scanUser(db.pool.QueryRow(ctx, `
		WITH t AS (UPDATE api_tokens SET last_used_at = now() WHERE token_sha256 = $1 AND revoked_at IS NULL RETURNING user_id, read_only)
		SELECT `+userColumns+`, t.read_only FROM users JOIN t ON t.user_id = users.id WHERE disabled_at IS NULL`, hashToken(token)), &readOnly)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, attune.ErrUnauthorized
	}
	return u, readOnly, mapErr(err, "check API token", "")
}

// ListAPITokens returns a user's tokens, newest first.
func (db *DB) ListAPITokens(ctx context.Context, userID int64) ([]APIToken, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, name, prefix, created_at, last_used_at, revoked_at, read_only FROM api_tokens
		WHERE user_id = $1 ORDER BY created_at DESC, id DESC`, userID)
	if err != nil {
		return nil, mapErr(err, "list API tokens", "")
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (APIToken, error) {
		var t APIToken
		err := r.Scan(&t.ID, &t.Name, &t.Prefix, &t.CreatedAt, &t.LastUsedAt, &t.RevokedAt, &t.ReadOnly)
		return t, err
	})
	return ts, mapErr(err, "list API tokens", "")
}

// RevokeAPIToken revokes one of the user's tokens; it stops working at
// once, on every replica.
func (db *DB) RevokeAPIToken(ctx context.Context, actorID *int64, userID, tokenID int64) error {
	err := db.inTx(ctx, func(tx pgx.Tx) error {
		var prefix string
		err := tx.QueryRow(ctx, `UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 AND user_id = $2 RETURNING prefix`,
			tokenID, userID).Scan(&prefix)
		if err != nil {
			return err
		}
		return audit(ctx, tx, attune.AuditEvent{ActorID: actorID, Action: "token.revoke", Details: map[string]string{"prefix": prefix}})
	})
	return mapErr(err, "revoke API token", "")
}
