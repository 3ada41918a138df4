package web

import (
	"context"
	"net/http"
	"reflect"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
)

// sessionTouch is how stale a session's stored expiry may grow before a
// request writes it again. With an idle timeout, the session manager
// commits every session on every request (autosaves included), and each
// commit rewrote the session's row; now a session whose data did not
// change is written at most once per sessionTouch, so the idle timeout
// holds to within this much: a session idle for IdleTimeout-sessionTouch
// may already have ended.
const sessionTouch = time.Minute

// sessionStore keeps the sessions in the database for the session manager
// (scs.CtxStore). It reads the signed-in account with the session, in the
// same round trip, and skips writes that would change nothing but move
// the expiry by less than sessionTouch.
type sessionStore struct {
	db    *store.DB
	codec scs.Codec
}

// loadedSession is what the store found for this request, kept in its
// context (by withLoadedSession) for the commit and the user middleware.
type loadedSession struct {
	token  string
	found  bool
	data   []byte
	expiry time.Time
	user   *attune.User
}

type loadedSessionKey struct{}

// withLoadedSession gives each request a place for what the session store
// finds, so that its commit can tell whether anything changed.
func withLoadedSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), loadedSessionKey{}, &loadedSession{})))
	})
}

func loadedFrom(ctx context.Context) *loadedSession {
	l, _ := ctx.Value(loadedSessionKey{}).(*loadedSession)
	return l
}

func (s *sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	found, ok, err := s.db.FindSession(ctx, token)
	if err != nil || !ok {
		return nil, false, err
	}
	if l := loadedFrom(ctx); l != nil {
		*l = loadedSession{token: token, found: true, data: found.Data, expiry: found.Expiry, user: found.User}
	}
	return found.Data, true, nil
}

func (s *sessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	if l := loadedFrom(ctx); l != nil && l.found && l.token == token && expiry.Sub(l.expiry) < sessionTouch && s.same(l.data, b) {
		return nil
	}
	var userID int64
	if _, values, err := s.codec.Decode(b); err == nil {
		userID, _ = values[kit.SessionUserID].(int64)
	}
	if err := s.db.SaveSession(ctx, token, b, expiry, userID); err != nil {
		return err
	}
	if l := loadedFrom(ctx); l != nil {
		*l = loadedSession{token: token, found: true, data: b, expiry: expiry}
	}
	return nil
}

// same reports whether two encodings hold the same session: the encoding
// of the same values may differ from one commit to the next (a map's
// order), so they are compared decoded.
func (s *sessionStore) same(a, b []byte) bool {
	da, va, err := s.codec.Decode(a)
	if err != nil {
		return false
	}
	db, vb, err := s.codec.Decode(b)
	if err != nil {
		return false
	}
	return da.Equal(db) && reflect.DeepEqual(va, vb)
}

func (s *sessionStore) DeleteCtx(ctx context.Context, token string) error {
	if l := loadedFrom(ctx); l != nil && l.token == token {
		*l = loadedSession{}
	}
	return s.db.DeleteSession(ctx, token)
}

// The session manager calls these only where it has no context.

func (s *sessionStore) Find(token string) ([]byte, bool, error) {
	return s.FindCtx(context.Background(), token)
}

func (s *sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return s.CommitCtx(context.Background(), token, b, expiry)
}

func (s *sessionStore) Delete(token string) error { return s.DeleteCtx(context.Background(), token) }
