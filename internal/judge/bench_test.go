package judge_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/store"
)

// BenchmarkRunThroughput runs a judge over criteria conversations against
// a provider that answers in 20 ms, with concurrency 32. It reports the
// runner's calls/s beside two references from the same run: the ideal
// (calls × 20 ms / 32, as if nothing but the provider took time), and a
// plain client — 32 goroutines sending the same requests over HTTP to the
// same fake server, doing nothing else — as %ideal and %plain. It also
// reports the runner's own time per call (wall time × concurrency / calls,
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
	var elapsed, plain, callTime, cpu, plainCPU time.Duration
	for n := range b.N {
		b.StopTimer()
		f := newBenchFixture(b, data.String(), latency, concurrency, n)
		ctx := context.Background()
		run, err := f.db.CreateRun(ctx, nil, store.NewRun{JudgeID: f.judge.ID, ProjectID: f.project.ID})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start, cpu0 := time.Now(), processCPU(b)
		if err := f.runner.Queue(ctx, run.ID); err != nil {
			b.Fatal(err)
		}
		done, err := f.runner.Wait(ctx, run.ID)
		elapsedRun := time.Since(start)
		elapsed += elapsedRun
		cpu += processCPU(b) - cpu0
		b.StopTimer()
		if err != nil || done.Status != attune.RunCompleted {
			b.Fatalf("run ended %v (%v)", done, err)
		}
		var recorded int
		var callMS float64
		if err := f.db.Pool().QueryRow(ctx, `SELECT count(*), coalesce(avg(latency_ms), 0)::float8 FROM judge_calls WHERE run_id = $1 AND ok`,
			run.ID).Scan(&recorded, &callMS); err != nil {
			b.Fatal(err)
		}
		callTime += time.Duration(callMS * float64(time.Millisecond))
		var first, last time.Time
		if err := f.db.Pool().QueryRow(ctx, `SELECT min(created_at), max(created_at) FROM judge_calls WHERE run_id = $1`, run.ID).Scan(&first, &last); err != nil {
			b.Fatal(err)
		}
		b.Logf("first call stored %v after the run was queued; the run seen done %v after the last", first.Sub(start).Round(time.Millisecond), start.Add(elapsedRun).Sub(last).Round(time.Millisecond))
		if recorded != items*12 {
			b.Fatalf("%d calls recorded, want %d", recorded, items*12)
		}
		calls += items * 12
		f.runner.Stop(ctx)
		cpu0 = processCPU(b)
		plain += plainClient(b, f.url, items*12, concurrency)
		plainCPU += processCPU(b) - cpu0
	}
	perSec := float64(calls) / elapsed.Seconds()
	ideal := concurrency / latency.Seconds()
	plainPerSec := float64(calls) / plain.Seconds()
	b.ReportMetric(perSec, "calls/s")
	b.ReportMetric(100*perSec/ideal, "%ideal")
	b.ReportMetric(plainPerSec, "plain-calls/s")
	b.ReportMetric(100*perSec/plainPerSec, "%plain")
	overhead := elapsed.Seconds()*concurrency/float64(calls) - latency.Seconds()
	b.ReportMetric(overhead*1e3, "ms-overhead/call")
	// How long a call took as the runner timed it, against the provider's
	// 20 ms: the time spent in the HTTP client and the server's scheduling.
	b.ReportMetric(float64(callTime.Milliseconds())/float64(b.N), "ms-call")
	// The process's CPU time per call (the fake provider's share
	// included), which the machine's load does not change: the runner's
	// against the plain client's.
	b.ReportMetric(float64(cpu.Microseconds())/float64(calls), "µs-cpu/call")
	b.ReportMetric(float64(plainCPU.Microseconds())/float64(calls), "plain-µs-cpu/call")
	b.Logf("%d calls: runner %.0f/s; ideal %.0f/s (%.0f%%); plain 32-worker client %.0f/s (%.0f%%)",
		calls, perSec, ideal, 100*perSec/ideal, plainPerSec, 100*perSec/plainPerSec)
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// plainClient sends n chat completions from `workers` goroutines to the
// provider at url with a plain HTTP client, as fast as it answers, and
// returns how long they took: the most any client could do there.
func plainClient(b *testing.B, url string, n, workers int) time.Duration {
	body := []byte(`{"model":"fake-1","messages":[{"role":"system","content":"Judge the criterion."},` +
		`{"role":"user","content":"Worry number 1 keeps me up. That sounds tiring. What is on your mind at night?"}]}`)
	tr := &http.Transport{MaxIdleConnsPerHost: workers}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var next atomic.Int64
	var failed atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+runnerKey)
				resp, err := hc.Do(req)
				if err != nil {
					failed.Store(err.Error())
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Store(resp.Status)
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	if msg := failed.Load(); msg != nil {
		b.Fatalf("plain client: %v", msg)
	}
	return d
}

type benchFixture struct {
	url     string // the provider's
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
	return &benchFixture{url: f.srv.URL, db: f.db, runner: f.runner, project: f.project, judge: f.judge}
}
