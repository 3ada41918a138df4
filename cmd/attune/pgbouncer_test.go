package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/pgcluster"
	"github.com/attune/attune/internal/store"
)

// TestBehindPgBouncerInTransactionMode runs attune behind a real PgBouncer
// in transaction mode. Without ATTUNE_DIRECT_DATABASE_URL it refuses to
// start, naming the setting; with it (straight to PostgreSQL) annotators
// submit through the pooler and a judge run, whose queue needs sessions,
// completes with one answer per item and rubric item.
func TestBehindPgBouncerInTransactionMode(t *testing.T) {
	t.Parallel()
	primary := pgcluster.NewPrimary(t, pgcluster.Options{})
	bouncer := primary.NewPgBouncer(t, "transaction")
	direct := primary.URL("attune")
	pooled := bouncer.URL("attune")

	const items, annotators = 8, 2
	h := newHAProject(t, direct, items, annotators, 0)
	out, err := runCmd(t, envFor(pooled, h.env...), "", "serve")
	if err == nil || !strings.Contains(err.Error(), "ATTUNE_DIRECT_DATABASE_URL") {
		t.Fatalf("serve behind PgBouncer without a direct connection: %v, want a refusal naming ATTUNE_DIRECT_DATABASE_URL\n%s", err, out)
	}

	s := serve(t, envFor(pooled, append(h.env, "ATTUNE_DIRECT_DATABASE_URL", direct)...))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var acks atomic.Int64
	errs := make(chan error, annotators)
	anns := make([]*annotator, annotators)
	for i := range anns {
		anns[i] = &annotator{base: s.base, token: h.tokens[i], client: &http.Client{Timeout: 20 * time.Second}, acked: map[int64]int64{}}
		go func() { errs <- anns[i].work(ctx, h.p.ID, &acks) }()
	}
	for range anns {
		if err := <-errs; err != nil {
			t.Fatalf("an annotator: %v", err)
		}
	}
	if n := acks.Load(); n != items*2 {
		t.Fatalf("%d submissions acknowledged, want %d", n, items*2)
	}
	for _, a := range anns {
		for _, r := range a.responses {
			if r.status >= 500 {
				t.Fatalf("%s answered %d behind PgBouncer: %s", r.path, r.status, r.body)
			}
		}
	}
	waiter, err := judge.NewRunner(h.db, judge.RunnerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run, err := waiter.Wait(ctx, h.run.ID)
	if err != nil || run.Status != attune.RunCompleted {
		t.Fatalf("the judge run behind PgBouncer is %v (%v)", run, err)
	}
	var jl, jdistinct int
	if err := h.db.Pool().QueryRow(ctx, `SELECT count(*), count(DISTINCT (item_id, rubric_item_key)) FROM labels l JOIN raters r ON r.id = l.rater_id WHERE r.judge_id = $1`,
		h.judge.ID).Scan(&jl, &jdistinct); err != nil {
		t.Fatal(err)
	}
	if want := items * len(h.def.Items); jl != want || jdistinct != want {
		t.Fatalf("the judge has %d answers (%d distinct), want %d", jl, jdistinct, want)
	}
}

func TestReadmeStatesTheSessionPoolDefault(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("small pool (%d connections unless it sets `pool_max_conns`)", store.DefaultSessionMaxConns); !strings.Contains(string(readme), want) {
		t.Fatalf("README.md does not say %q", want)
	}
}
