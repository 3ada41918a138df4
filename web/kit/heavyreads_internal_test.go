package kit

import (
	"testing"
	"time"

	"github.com/attune/attune/internal/store"
)

func TestReadFromLine(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		src  store.ReadSource
		want string
	}{
		{store.ReadSource{}, ""},
		{store.ReadSource{Configured: true, Replica: true, UpToDate: true}, "Read from the replica, which is up to date."},
		{store.ReadSource{Configured: true, Replica: true, Behind: 2600 * time.Millisecond}, "Read from the replica: data as of 3 s ago at most."},
		{store.ReadSource{Configured: true, Replica: true, Behind: 200 * time.Millisecond}, "Read from the replica: data as of 1 s ago at most."},
		{store.ReadSource{Configured: true, Fallback: store.FallbackDown}, "Read from the primary: the replica does not answer."},
		{store.ReadSource{Configured: true, Fallback: store.FallbackNotStandby}, "Read from the primary: the replica is no longer a standby of it."},
		{store.ReadSource{Configured: true, Fallback: store.FallbackLagging, Behind: 5 * time.Minute, MaxLag: 30 * time.Second},
			"Read from the primary: the replica is 5 min behind, more than the 30 s allowed."},
		{store.ReadSource{Configured: true, Fallback: store.FallbackLagging}, "Read from the primary: how far behind the replica is cannot be told."},
	} {
		if got := readFromLine(c.src); got != c.want {
			t.Errorf("readFromLine(%+v) = %q, want %q", c.src, got, c.want)
		}
	}
}
