package kit

import (
	"context"

	"github.com/attune/attune/internal/attune"
)

type ctxKey int

const (
	requestKey ctxKey = iota
	userKey
)

// RequestInfo travels with the request so that the access log, written on
// the way out, knows what inner handlers learned (who the user was).
type RequestInfo struct {
	ID     string
	UserID int64
}

// WithRequestInfo returns ctx carrying ri.
func WithRequestInfo(ctx context.Context, ri *RequestInfo) context.Context {
	return context.WithValue(ctx, requestKey, ri)
}

// InfoFrom returns the request's info; an empty one outside a request.
func InfoFrom(ctx context.Context) *RequestInfo {
	ri, _ := ctx.Value(requestKey).(*RequestInfo)
	if ri == nil {
		return &RequestInfo{}
	}
	return ri
}

// WithUser returns ctx carrying the signed-in user, who the access log
// then names.
func WithUser(ctx context.Context, u *attune.User) context.Context {
	InfoFrom(ctx).UserID = u.ID
	return context.WithValue(ctx, userKey, u)
}

// UserFrom returns the signed-in user, or nil.
func UserFrom(ctx context.Context) *attune.User {
	u, _ := ctx.Value(userKey).(*attune.User)
	return u
}

// Session keys.
const (
	SessionUserID = "user_id"
	// SessionEpoch is the account's session epoch at sign-in: the session
	// ends when the account's epoch moves on (a password change or reset).
	SessionEpoch = "session_epoch"
	// SessionFlash and SessionFlashError hold the one-time message the
	// next page's frame shows, as a notice or as an error.
	SessionFlash      = "flash"
	SessionFlashError = "flash_error"
)

// Flash leaves a notice for the next page the user sees.
func (k *Kit) Flash(ctx context.Context, msg string) { k.Sessions.Put(ctx, SessionFlash, msg) }

// FlashError leaves an error message for the next page the user sees.
func (k *Kit) FlashError(ctx context.Context, msg string) {
	k.Sessions.Put(ctx, SessionFlashError, msg)
}
