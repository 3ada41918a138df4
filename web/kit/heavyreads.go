package kit

import (
	"fmt"
	"net/http"
	"time"

	"github.com/attune/attune/internal/store"
)

// HeavyReads returns the database a lead's report, export or items search
// reads (the replica while it keeps up, else the primary) and the sentence
// its page shows about that, "" when no replica is set. A read that goes
// back to the primary is logged as a warning, for the operator.
func (k *Kit) HeavyReads(r *http.Request) (*store.DB, string) {
	db, src := k.DB.HeavyReads(r.Context())
	if src.Fallback != "" {
		k.Log.WarnContext(r.Context(), "heavy read on the primary", "request_id", InfoFrom(r.Context()).ID,
			"replica", src.Fallback, "behind", src.Behind)
	}
	return db, readFromLine(src)
}

// readFromLine says in a sentence where a heavy read read and how current
// that is. The replica's lag is a bound: its newest change is that old, and
// what the primary wrote since may be missing.
func readFromLine(src store.ReadSource) string {
	switch {
	case !src.Configured:
		return ""
	case src.Replica && src.UpToDate:
		return "Read from the replica, which is up to date."
	case src.Replica:
		return fmt.Sprintf("Read from the replica: data as of %s ago at most.", lagText(src.Behind))
	case src.Fallback == store.FallbackDown:
		return "Read from the primary: the replica does not answer."
	case src.Fallback == store.FallbackNotStandby:
		return "Read from the primary: the replica is no longer a standby of it."
	case src.Behind > 0:
		return fmt.Sprintf("Read from the primary: the replica is %s behind, more than the %s allowed.", lagText(src.Behind), lagText(src.MaxLag))
	}
	return "Read from the primary: how far behind the replica is cannot be told."
}

// lagText writes a lag in whole seconds (or minutes), at least 1 s.
func lagText(d time.Duration) string {
	if d >= 2*time.Minute {
		return fmt.Sprintf("%d min", int(d/time.Minute))
	}
	return fmt.Sprintf("%d s", max(1, int((d+time.Second/2)/time.Second)))
}

// ReadFromHeader carries readFromLine on a download, which has no page to
// say it on.
const ReadFromHeader = "Attune-Read-From"
