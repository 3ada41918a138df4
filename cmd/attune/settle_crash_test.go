package main

import (
	"context"
	"net/netip"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/store"
)

// TestSettlingSurvivesKill9 kills a serving attune with SIGKILL while its
// settler is half-way through deciding gold for the items whose last
// labels were just submitted: gold written, its announcement not yet,
// nothing committed. After a restart the items are settled exactly once:
// their gold, one gold.changed and one full-overlap delivery, the queue
// empty. The test waits on the settler's notification, not on time.
func TestSettlingSurvivesKill9(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := dbtest.NewURL(t)
	env := envFor(dbURL)
	emails := []string{"ann@example.org", "bob@example.org"}
	newPilot(t, env, twoReplies, emails...)
	db, p := openPilot(t, dbURL)
	lead, err := db.FindUserByEmail(ctx, "lee@example.org")
	if err != nil {
		t.Fatal(err)
	}
	policy := attune.JudgePolicy{Hosts: []attune.HostRule{{Prefix: netip.MustParsePrefix("10.0.0.0/8")}}}
	if _, _, err := db.CreateWebhook(ctx, &lead.ID, policy, p.ID, "https://10.1.2.3/hook",
		[]attune.WebhookEvent{attune.EventGoldChanged, attune.EventFullOverlap}); err != nil {
		t.Fatal(err)
	}
	// Both people agree on both items: each submit of the second one
	// completes an item and queues it; nothing is settled yet, since no
	// settler runs.
	labelEach(t, db, p, emails, func(_ int, u *attune.User, a *attune.Assignment, _ *attune.Item) {
		answers := map[string]string{"emotion": "4", "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
		if _, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: a.ID, UserID: u.ID, Answers: answers}); err != nil {
			t.Fatal(err)
		}
	})
	type state struct{ gold, verdicts, queued, goldChanged, fullOverlap int }
	read := func() state {
		t.Helper()
		var s state
		if err := db.Pool().QueryRow(ctx, `
			SELECT (SELECT count(*) FROM gold_labels WHERE project_id = $1),
			       (SELECT count(*) FROM gold_consensus WHERE project_id = $1),
			       (SELECT count(*) FROM settle_queue WHERE project_id = $1),
			       (SELECT count(*) FROM webhook_deliveries WHERE event = $2),
			       (SELECT count(*) FROM webhook_deliveries WHERE event = $3)`,
			p.ID, string(attune.EventGoldChanged), string(attune.EventFullOverlap)).Scan(&s.gold, &s.verdicts, &s.queued, &s.goldChanged, &s.fullOverlap); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := read(); got != (state{queued: 2}) {
		t.Fatalf("before any settler: %+v, want the 2 items queued and nothing else", got)
	}

	// The announcements' table is held shared: the settler writes gold and
	// then waits, in its open transaction, to queue the gold.changed.
	hold, err := db.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Rollback(ctx)
	if _, err := hold.Exec(ctx, `LOCK TABLE webhook_deliveries IN SHARE MODE`); err != nil {
		t.Fatal(err)
	}
	first := startAttune(t, []string{"ATTUNE_ADDR=127.0.0.1:0", "ATTUNE_LOG_FORMAT=text", "DATABASE_URL=" + dbURL + "&application_name=attune-killed"}, "serve")
	// Until the settler's session waits on that lock, holding the gold
	// table's write lock: the gold is written, uncommitted.
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	for {
		var midway bool
		if err := db.Pool().QueryRow(ctx, `
			SELECT EXISTS (
				SELECT 1 FROM pg_stat_activity a JOIN pg_locks l ON l.pid = a.pid
				WHERE a.datname = current_database() AND a.application_name = 'attune-killed' AND a.wait_event_type = 'Lock'
				  AND l.relation = 'gold_labels'::regclass AND l.mode = 'RowExclusiveLock' AND l.granted)`).Scan(&midway); err != nil {
			t.Fatal(err)
		}
		if midway {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the settler never reached the announcement with gold written:\n%s", first.stderr)
		}
		// PostgreSQL tells nobody that a session started waiting: its
		// state is looked at again at the next tick.
		<-tick.C
	}
	tick.Stop()
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.cmd.Wait()
	// The killed process's session waits on the lock and would not notice
	// its client gone: it is ended, and its transaction with it.
	if _, err := db.Pool().Exec(ctx, `
		SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'attune-killed'`); err != nil {
		t.Fatal(err)
	}
	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != (state{queued: 2}) {
		t.Fatalf("after the kill: %+v, want the 2 items queued again and nothing else", got)
	}

	listener, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(ctx)
	if _, err := listener.Exec(ctx, "LISTEN "+store.SettledChannel); err != nil {
		t.Fatal(err)
	}
	second := startAttune(t, []string{"ATTUNE_ADDR=127.0.0.1:0", "ATTUNE_LOG_FORMAT=text", "DATABASE_URL=" + dbURL}, "serve")
	restarted := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	n, err := listener.WaitForNotification(wctx)
	if err != nil {
		t.Fatalf("no settling after the restart: %v\n%s", err, second.stderr)
	}
	if n.Payload != strconv.FormatInt(p.ID, 10) {
		t.Fatalf("settled project %s, want %d", n.Payload, p.ID)
	}
	t.Logf("settled %v after the restart", time.Since(restarted).Round(time.Millisecond))
	// Five rubric items of gold for each of the two items, one verdict
	// each, one announcement of each kind.
	if got, want := read(), (state{gold: 10, verdicts: 2, goldChanged: 1, fullOverlap: 1}); got != want {
		t.Fatalf("after the restart: %+v, want %+v", got, want)
	}
}
