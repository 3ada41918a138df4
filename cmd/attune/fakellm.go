package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/attune/attune/internal/fakellm"
)

func fakeLLMFlags(fs *flag.FlagSet) {
	fs.String("addr", "127.0.0.1:8081", "address to listen on")
	fs.Duration("latency", 0, "time to wait before each answer")
	fs.Float64("rate-429", 0, "share of requests answered 429 Too Many Requests (0–1)")
	fs.Float64("rate-500", 0, "share of requests answered 500 (0–1)")
	fs.Float64("rate-timeout", 0, "share of requests that hang until the client gives up (0–1)")
	fs.Float64("rate-garbage", 0, "share of requests answered with text holding no valid answer (0–1)")
	fs.Duration("retry-after", time.Second, "the Retry-After sent with a 429")
	fs.String("api-key", "", "when set, requests with another key get 401")
	fs.Int64("seed", 1, "seed of the failure injection")
	fs.String("behaviour", "", "how the fake reads a dialogue, for the robustness probes: hash (default: the whole prompt), stable, random (at temperature above 0), length or names")
}

func runFakeLLM(ctx context.Context, e env, args []string) error {
	fs := flag.NewFlagSet("fake-llm", flag.ContinueOnError)
	fakeLLMFlags(fs)
	if err := parseFlags(fs, e, args); err != nil {
		return err
	}
	f := func(name string) float64 {
		v, _ := strconv.ParseFloat(fs.Lookup(name).Value.String(), 64)
		return v
	}
	d := func(name string) time.Duration {
		v, _ := time.ParseDuration(fs.Lookup(name).Value.String())
		return v
	}
	for _, name := range []string{"rate-429", "rate-500", "rate-timeout", "rate-garbage"} {
		if v := f(name); v < 0 || v > 1 {
			return fmt.Errorf("--%s must be from 0 to 1", name)
		}
	}
	seed, _ := strconv.ParseInt(fs.Lookup("seed").Value.String(), 10, 64)
	behaviour, ok := fakellm.ParseBehaviour(fs.Lookup("behaviour").Value.String())
	if !ok {
		return fmt.Errorf("%w: --behaviour must be hash, stable, random, length or names", errUsage)
	}
	srv := fakellm.New(fakellm.Options{Behaviour: behaviour,
		Latency: d("latency"), Rate429: f("rate-429"), Rate500: f("rate-500"), RateTimeout: f("rate-timeout"), RateGarbage: f("rate-garbage"),
		RetryAfter: d("retry-after"), APIKey: fs.Lookup("api-key").Value.String(), Seed: seed,
	})
	ln, err := net.Listen("tcp", fs.Lookup("addr").Value.String())
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	fmt.Fprintf(e.stdout, "fake LLM serving at http://%s/v1 (any model; the model \"missing-model\" answers 404)\n", ln.Addr())
	fmt.Fprintf(e.stderr, "judges may call it once an admin allows it: ATTUNE_JUDGE_HOSTS=%s attune serve\n", ln.Addr())
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}
