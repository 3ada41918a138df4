package judge_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
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

// provider20ms answers every chat completion after the latency with one
// fixed valid answer. A real provider runs elsewhere; this one costs the
// machine almost nothing, so the figure measures the runner, not the fake
// model's own work (which the tests' richer fake would add).
func provider20ms(latency time.Duration) func(http.Handler) http.Handler {
	body := []byte(`{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop",` +
		`"message":{"role":"assistant","content":"{\"reasoning\":\"fine\",\"answer\":\"YES\"}"}}],` +
		`"usage":{"prompt_tokens":300,"completion_tokens":10,"total_tokens":310}}`)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
				next.ServeHTTP(w, r)
				return
			}
			io.Copy(io.Discard, r.Body)
			t := time.NewTimer(latency)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		})
	}
}

func newBenchFixture(b *testing.B, data string, latency time.Duration, concurrency, _ int) *benchFixture {
	f := newFixtureTB(b, setup{rubric: "coaching-conversation@2.0", data: data, wrap: provider20ms(latency),
		settings: attune.JudgeSettings{Concurrency: concurrency}, opts: judge.RunnerOptions{Workers: concurrency * 2}})
	if err := f.runner.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	return &benchFixture{db: f.db, runner: f.runner, project: f.project, judge: f.judge}
}
