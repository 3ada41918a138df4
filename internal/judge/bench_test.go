package judge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/store"
)

// BenchmarkRunThroughput runs a judge over criteria conversations against
// a provider that answers in 20 ms, with concurrency 32: the ideal is 32 /
// 20 ms = 1,600 calls per second. It reports calls/s, the share of the
// ideal, and the runner's own time per call (wall time × concurrency / calls,
// less the provider's 20 ms).
func BenchmarkRunThroughput(b *testing.B) {
	const latency = 20 * time.Millisecond
	const concurrency = 32
	const items = 400 // × 12 criteria = 4,800 calls, three seconds at the ideal
	var data strings.Builder
	for i := range items {
		fmt.Fprintf(&data, `{"id":"b%04d","messages":[{"role":"user","content":"Worry number %d keeps me up."},{"role":"assistant","content":"That sounds tiring. What is on your mind at night?"}]}`+"\n", i, i)
	}
	var calls int
	var elapsed time.Duration
	for n := range b.N {
		b.StopTimer()
		f := newBenchFixture(b, data.String(), latency, concurrency, n)
		ctx := context.Background()
		run, err := f.db.CreateRun(ctx, nil, store.NewRun{JudgeID: f.judge.ID, ProjectID: f.project.ID})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		if err := f.runner.Queue(ctx, run.ID); err != nil {
			b.Fatal(err)
		}
		done, err := f.runner.Wait(ctx, run.ID)
		elapsed += time.Since(start)
		b.StopTimer()
		if err != nil || done.Status != attune.RunCompleted {
			b.Fatalf("run ended %v (%v)", done, err)
		}
		calls += items * 12
		f.runner.Stop(ctx)
	}
	perSec := float64(calls) / elapsed.Seconds()
	b.ReportMetric(perSec, "calls/s")
	b.ReportMetric(100*perSec/(concurrency/latency.Seconds()), "%ideal")
	overhead := elapsed.Seconds()*concurrency/float64(calls) - latency.Seconds()
	b.ReportMetric(overhead*1e3, "ms-overhead/call")
}

type benchFixture struct {
	db      *store.DB
	runner  *judge.Runner
	project *attune.Project
	judge   *attune.Judge
}

func newBenchFixture(b *testing.B, data string, latency time.Duration, concurrency, _ int) *benchFixture {
	f := newFixtureTB(b, setup{rubric: "coaching-conversation@2.0", data: data, fake: fakellm.Options{Latency: latency},
		settings: attune.JudgeSettings{Concurrency: concurrency}, opts: judge.RunnerOptions{Workers: concurrency * 2}})
	if err := f.runner.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return &benchFixture{db: f.db, runner: f.runner, project: f.project, judge: f.judge}
}
