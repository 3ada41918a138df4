package store_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/pgcluster"
	"github.com/attune/attune/internal/store"
)

// TestAcknowledgedWritesWaitForTheSynchronousStandby: every write attune
// acknowledges (imported items, an annotator's labels, a judge's answers,
// a run's state) commits only once the synchronous standby has it, so a
// failover to that standby loses none of them. The primary is told to wait
// for a standby that is not there: a write that commits without waiting
// (synchronous_commit off) returns at once, one that waits blocks in
// SyncRep until the primary is told to wait for no one.
func TestAcknowledgedWritesWaitForTheSynchronousStandby(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	primary := pgcluster.NewPrimary(t, pgcluster.Options{})
	primary.Query(t, "postgres", `CREATE DATABASE attune`)
	db, err := store.Open(ctx, primary.URL("attune"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx, io.Discard); err != nil {
		t.Fatal(err)
	}
	f := newProject(t, db, projectOpts{rubric: "empathetic-understanding@1", items: 2, annotators: 1})
	ids, err := db.ItemIDs(ctx, f.project.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	run := startedRun(t, f, "durable")
	ann := f.annotators[0]
	asg, err := db.NextAssignment(ctx, f.project.ID, ann.ID)
	if err != nil {
		t.Fatal(err)
	}

	writes := []struct {
		name  string
		write func(context.Context) error
	}{
		{"import", func(ctx context.Context) error {
			_, err := db.ImportItems(ctx, f.project.ID, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
				return emit([]store.ImportItem{testItem(50, "late")})
			})
			return err
		}},
		{"submit labels", func(ctx context.Context) error {
			_, err := db.SubmitLabels(ctx, store.Submission{AssignmentID: asg.ID, UserID: ann.ID, Answers: map[string]string{"understanding": "3"}, ActiveMS: 1000})
			return err
		}},
		{"judge answers", func(ctx context.Context) error {
			_, _, err := db.WriteJudgeAnswers(ctx, run, ids[0], judgeLabels(), 10)
			return err
		}},
		{"last judge answers and the run's mark", func(ctx context.Context) error {
			_, completed, err := db.WriteJudgeAnswers(ctx, run, ids[1], judgeLabels(), 10)
			if err == nil && !completed {
				t.Error("the run's last answers did not complete it")
			}
			return err
		}},
	}
	waitFor := func(names string) {
		primary.Query(t, "postgres", `ALTER SYSTEM SET synchronous_standby_names = '`+names+`'`)
		primary.Query(t, "postgres", `SELECT pg_reload_conf()::text`)
	}
	// The reload reaches the commits only once the checkpointer has read
	// it, a moment later: a probe's commit that waits in SyncRep says the
	// wait is in force, and is then cancelled (its commit stays local).
	probe, err := pgx.Connect(ctx, primary.URL("attune"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { probe.Close(context.Background()) })
	if _, err := probe.Exec(ctx, `CREATE TABLE sync_probe (x int)`); err != nil {
		t.Fatal(err)
	}
	waitInForce := func() {
		deadline := time.Now().Add(30 * time.Second)
		for {
			done := make(chan error, 1)
			go func() {
				_, err := probe.Exec(ctx, `INSERT INTO sync_probe VALUES (1)`)
				done <- err
			}()
			for waited := false; !waited; {
				select {
				case <-done:
					if time.Now().After(deadline) {
						t.Fatal("the primary does not wait for its synchronous standby 30 s after the reload")
					}
					time.Sleep(10 * time.Millisecond)
					waited = true // not in force yet: probe again
					continue
				default:
				}
				if primary.Query(t, "attune", `SELECT count(*)::text FROM pg_stat_activity WHERE wait_event = 'SyncRep'`)[0] != "0" {
					primary.Query(t, "attune", `SELECT count(pg_cancel_backend(pid))::text FROM pg_stat_activity WHERE wait_event = 'SyncRep'`)
					<-done
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
	}
	for _, w := range writes {
		waitFor("absent")
		waitInForce()
		done := make(chan error, 1)
		go func() { done <- w.write(ctx) }()
		deadline := time.Now().Add(30 * time.Second)
		for {
			waiting := primary.Query(t, "attune", `SELECT count(*)::text FROM pg_stat_activity WHERE wait_event = 'SyncRep'`)
			if waiting[0] != "0" {
				break
			}
			select {
			case err := <-done:
				t.Fatalf("%s: acknowledged (%v) without waiting for the synchronous standby", w.name, err)
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: neither acknowledged nor waiting for the standby after 30 s", w.name)
			}
			time.Sleep(10 * time.Millisecond)
		}
		select {
		case err := <-done:
			t.Fatalf("%s: acknowledged (%v) while its commit waited for the standby", w.name, err)
		default:
		}
		waitFor("")
		if err := <-done; err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
	}
	if r, err := db.FindRun(ctx, run.ID); err != nil || r.Status != attune.RunCompleted {
		t.Fatalf("the run after its last answers: %+v (%v)", r, err)
	}
}
