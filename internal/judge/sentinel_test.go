package judge_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/calibration"
	"github.com/attune/attune/internal/store"
)

// swapModel is a provider whose model changes behind its name once swapped
// is set: it answers requests for fake-1 as fake-2 does, which the fake
// model answers differently (it hashes the model with the prompt).
func swapModel(swapped *atomic.Bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if swapped.Load() && r.Body != nil {
				body, _ := io.ReadAll(r.Body)
				body = bytes.ReplaceAll(body, []byte(`"model":"fake-1"`), []byte(`"model":"fake-2"`))
				r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
			}
			next.ServeHTTP(w, r)
		})
	}
}

// TestSentinelsFindASilentModelChange: every run asks the calibration
// items afresh (not from the cache, and priced in the estimate); the
// judge's accuracy on them is kept run by run, and when the provider
// swaps the model behind its name the series steps at that run, with
// its date.
func TestSentinelsFindASilentModelChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var swapped atomic.Bool
	var data strings.Builder
	for i := range 8 {
		fmt.Fprintf(&data, `{"id":"c%d","messages":[{"role":"user","content":"I keep failing my driving test (%d)."},{"role":"assistant","content":"That is discouraging. What happened last time?"},{"role":"user","content":"I panicked at the roundabout."},{"role":"assistant","content":"Roundabouts are hard. Shall we practise a plan for them?"}]}`+"\n", i, i)
	}
	f := newFixture(t, setup{rubric: "coaching-conversation@2.0", data: data.String(), wrap: swapModel(&swapped),
		settings: attune.JudgeSettings{MaxTokens: 100, Prices: attune.Prices{InputPerMTok: 1, OutputPerMTok: 2}}})

	// One runner works every run of the test: stopping it and starting it
	// again between runs would race its own worker lock.
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := f.runner.Start(wctx); err != nil {
		t.Fatal(err)
	}
	defer f.runner.Stop(context.Background())
	runOnce := func() *attune.JudgeRun {
		t.Helper()
		run, err := f.db.CreateRun(wctx, nil, store.NewRun{JudgeID: f.judge.ID, ProjectID: f.project.ID})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.runner.Queue(wctx, run.ID); err != nil {
			t.Fatal(err)
		}
		done, err := f.runner.Wait(wctx, run.ID)
		if err != nil {
			t.Fatalf("waiting for run %d: %v", run.ID, err)
		}
		return done
	}

	// The judge labels everything once; its answers to seven items become
	// their gold, and those items the calibration set: a step is told
	// from chance on 7 items against two runs before it
	// (calibration.MinSentinelItems and the baseline it needs).
	first := runOnce()
	lead, err := f.db.CreateUser(ctx, nil, store.NewUser{Email: "lead@example.org", Role: attune.RoleLead, PasswordHash: "$argon2id$x"})
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string]map[string]string{}
	for _, l := range f.labels(t) {
		if answers[l.item] == nil {
			answers[l.item] = map[string]string{}
		}
		answers[l.item][l.key] = l.value
	}
	for _, source := range []string{"c0", "c1", "c2", "c3", "c4", "c5", "c6"} {
		var itemID int64
		if err := f.db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 AND source_id = $2`, f.project.ID, source).Scan(&itemID); err != nil {
			t.Fatal(err)
		}
		if err := f.db.Adjudicate(ctx, store.Adjudication{ProjectID: f.project.ID, ItemID: itemID, ActorID: lead.ID, Answers: answers[source]}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.db.AddCalibration(ctx, nil, f.project.ID, source, nil); err != nil {
			t.Fatal(err)
		}
	}

	// The estimate prices the sentinels: 8 items and 7 calibration items,
	// 12 criteria each.
	e, err := f.runner.EstimateRun(ctx, f.judge, f.project, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if e.Items != 8 || e.Sentinels != 7 || e.Calls != 15*12 {
		t.Fatalf("estimate %+v, want 8 items, 7 sentinels, 180 calls", e)
	}

	// Two runs on the model as it was, then one after the swap.
	var runs []*attune.JudgeRun
	for i := range 3 {
		if i == 2 {
			swapped.Store(true)
		}
		run := runOnce()
		if run.Status != attune.RunCompleted {
			t.Fatalf("run %d: %s (%s)", run.ID, run.Status, run.Reason)
		}
		// Asked afresh: 7 items × 12 criteria, none from the cache, even
		// though the same prompts were answered (and cached) before.
		// Calls are recorded in batches: wait for this run's.
		var calls, sentinels int
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_calls WHERE run_id = $1 AND ok`, run.ID).Scan(&calls); err != nil {
				t.Fatal(err)
			}
			if calls >= 84 {
				break
			}
		}
		if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM judge_sentinels WHERE run_id = $1`, run.ID).Scan(&sentinels); err != nil {
			t.Fatal(err)
		}
		if calls != 84 || sentinels != 7 {
			rows, err := f.db.Pool().Query(ctx, `SELECT run_id, ok, count(*) FROM judge_calls GROUP BY 1, 2 ORDER BY 1`)
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var r, n int
				var ok bool
				if err := rows.Scan(&r, &ok, &n); err != nil {
					t.Fatal(err)
				}
				t.Logf("run %d ok %v: %d calls", r, ok, n)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			rows.Close()
			t.Fatalf("run %d made %d calls and kept %d sentinel answer sets, want 84 (asked afresh) and 7", run.ID, calls, sentinels)
		}
		runs = append(runs, run)
	}
	if first.ID >= runs[0].ID {
		t.Fatal("runs out of order")
	}

	h, err := f.db.CalibrationHistory(ctx, f.project.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Kind != "judge" || len(h[0].Records) != 21 {
		t.Fatalf("history %+v, want the judge's 21 sentinel answer sets", h)
	}
	points := calibration.Sentinels(f.def, h[0].Records)
	if len(points) != 3 {
		t.Fatalf("points %+v", points)
	}
	for i, p := range points {
		if p.Run != runs[i].ID || p.N != 7 || time.Since(p.At) > time.Minute {
			t.Fatalf("point %d: %+v", i, p)
		}
	}
	if points[0].Accuracy != 1 || points[1].Accuracy != 1 || points[0].Step || points[1].Step {
		t.Fatalf("before the swap: %+v", points[:2])
	}
	if !points[2].Step || points[2].Accuracy > 0.8 {
		t.Fatalf("after the swap: %+v, want a step", points[2])
	}
	// The sentinels are not labels: the judge still has one answer set per
	// item, from its first run.
	var sets int
	if err := f.db.Pool().QueryRow(ctx, `SELECT count(*) FROM answer_sets s JOIN raters r ON r.id = s.rater_id WHERE r.judge_id = $1`, f.judge.ID).Scan(&sets); err != nil {
		t.Fatal(err)
	}
	if sets != 8 {
		t.Fatalf("%d answer sets of the judge, want 8", sets)
	}
}
