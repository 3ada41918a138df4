package kit

import (
	"net/http"

	"github.com/attune/attune/internal/store"
)

// unavailableRetryAfter is the Retry-After, in seconds, of a 503 for a
// database that is away: a failover to a synchronous standby takes a few.
const unavailableRetryAfter = "2"

// unavailableMessage tells a person what a request that met no database
// means for them.
const unavailableMessage = "The database is unavailable for a moment (it may be failing over to its standby). " +
	"Everything attune confirmed is kept; this request may not have been done: try again in a few seconds."

// DatabaseAway answers err with a 503 when it means the database could
// not be reached (store.Unavailable), logging it once as a warning, and
// reports whether it did. write renders the answer in the caller's form
// (a page or JSON).
func (k *Kit) DatabaseAway(w http.ResponseWriter, r *http.Request, err error, write func(status int, message string)) bool {
	if !store.Unavailable(err) {
		return false
	}
	k.Log.WarnContext(r.Context(), "database unavailable", "request_id", InfoFrom(r.Context()).ID, "method", r.Method, "path", r.URL.Path, "err", err)
	w.Header().Set("Retry-After", unavailableRetryAfter)
	write(http.StatusServiceUnavailable, unavailableMessage)
	return true
}
