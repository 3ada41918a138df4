package pgcluster

import (
	"testing"
)

// TestStandbyTakesOver checks the harness itself: a row committed on the
// primary with a synchronous standby is on the standby once it is
// promoted after the primary was killed, and the promoted server takes
// writes.
func TestStandbyTakesOver(t *testing.T) {
	t.Parallel()
	p := NewPrimary(t, Options{SyncStandby: "standby1"})
	s := p.NewStandby(t, "standby1")
	if got := p.Query(t, "postgres", `SELECT sync_state FROM pg_stat_replication`); len(got) != 1 || got[0] != "sync" {
		t.Fatalf("standby's sync_state %q, want sync", got)
	}
	p.Query(t, "postgres", `CREATE TABLE acked (n int)`)
	p.Query(t, "postgres", `INSERT INTO acked SELECT generate_series(1, 100)`)
	p.Kill()
	if got := s.Query(t, "postgres", `SELECT pg_is_in_recovery()::text`); got[0] != "true" {
		t.Fatalf("standby in recovery: %q", got)
	}
	s.Promote(t)
	if got := s.Query(t, "postgres", `SELECT count(*)::text FROM acked`); got[0] != "100" {
		t.Fatalf("%s rows on the promoted standby, want the 100 acknowledged", got[0])
	}
	s.Query(t, "postgres", `INSERT INTO acked VALUES (101)`)
}
