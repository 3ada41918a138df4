// Package fakellm is a deterministic stand-in for a model endpoint, for
// development, demos and tests: an http.Handler that speaks OpenAI's chat
// completions (POST /v1/chat/completions, GET /v1/models) and enough of
// Anthropic's Messages API (POST /v1/messages) for the judge clients.
//
// It answers from the prompt alone: it finds the allowed answers (the JSON
// schema's enum when structured output is asked for, otherwise the
// prompt's own words, such as "return YES, NO or NA ONLY" or "an integer
// from 1 to 5", and 1–5 when it finds none), picks one by hashing the
// model and the messages, and writes it as JSON, as the bare answer, or as
// reasoning followed by "Answer: …". With log-probabilities it returns a
// plausible distribution whose most likely token is the chosen answer. It
// reports token usage and simulates prefix caching.
//
// On request it adds latency and fails: 429 with Retry-After, 500,
// timeouts and unparseable answers, at rates drawn from a seeded sequence
// so that a run is reproducible, or forced per request (the X-Fake-Fail
// header) or per model (a "+429", "+500", "+timeout" or "+garbage" suffix).
// The X-Fake-Answer header makes it give that answer whatever the question
// allows, to play a model that breaks the rubric's rules.
// docs/judges.md lists every option.
package fakellm

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure a Server. The zero value answers every request at
// once, never fails and accepts any API key.
type Options struct {
	// Latency is added before every answer.
	Latency time.Duration
	// Rate429, Rate500, RateTimeout and RateGarbage are the shares of
	// completion requests (0 to 1, summing to at most 1) answered with a
	// 429, a 500, a hang, or an answer with no valid value in it.
	Rate429, Rate500, RateTimeout, RateGarbage float64
	// RetryAfter is the wait a 429 asks for, sent as Retry-After (whole
	// seconds, rounded up) and retry-after-ms; 0 sends neither header.
	RetryAfter time.Duration
	// Timeout is how long a "timeout" hangs before answering 504, unless
	// the client goes away first; 0 means 60 seconds.
	Timeout time.Duration
	// APIKey, if set, is the only key accepted; any other gets a 401.
	APIKey string
	// Seed seeds the sequence that decides which requests fail.
	Seed int64
	// Unsupported lists request parameters the server refuses with a 400
	// naming them, as an endpoint without them does: "response_format",
	// "logprobs", "top_logprobs", "seed", "max_tokens" (OpenAI shape only).
	Unsupported []string
	// Answer, if set, is asked first for the answer to each prompt (the
	// text of the last user message) among the allowed answers; when it
	// returns ok with one of them, the fake gives that answer instead of
	// one chosen from the prompt's hash. A demo uses it to make a fake
	// judge that reads its dialogues plausibly. It must be safe for
	// concurrent use.
	Answer func(prompt string, allowed []string) (string, bool)
	// Turns, if set, is asked for the turn evidence of each structured
	// answer, given the prompt as Answer gets it and the answer chosen;
	// what it returns is sent beside the answer as "turns", where a judge
	// names the turns an answer fails at. It may return turns a judge
	// should not give (on a passing answer, past the dialogue's end), as a
	// model may. nil sends no "turns". It must be safe for concurrent use.
	Turns func(prompt, answer string) []int
	// Behaviour is how the fake reads a dialogue (BehaveStable,
	// BehaveRandom, BehaveLength, BehaveNames); "" answers from a hash of
	// the whole prompt. Answer and the X-Fake-Answer header come first.
	Behaviour Behaviour
}

// Outcomes of a completion request, as Stats counts them and the
// X-Fake-Fail header forces them.
const (
	failNone    = ""
	fail429     = "429"
	fail500     = "500"
	failTimeout = "timeout"
	failGarbage = "garbage"
)

// Stats counts what the server has done since it started.
type Stats struct {
	// Requests counts completion requests (chat completions and
	// messages), whatever their outcome.
	Requests int
	// OK counts valid answers; Garbage answers with no valid value.
	OK, Garbage int
	// RateLimited, ServerErrors and Timeouts count injected failures.
	RateLimited, ServerErrors, Timeouts int
	// Unauthorized (wrong key), NotFound (missing-model) and BadRequest
	// (malformed or unsupported requests) count refusals.
	Unauthorized, NotFound, BadRequest int
	// Arrivals are the arrival times of the last maxArrivals completion
	// requests, oldest first, so that a test can measure the rate the
	// server saw.
	Arrivals []time.Time
}

// maxArrivals bounds the arrival times kept.
const maxArrivals = 10000

// Server is the fake endpoint. It is safe for concurrent use.
type Server struct {
	opts  Options
	mux   *http.ServeMux
	count atomic.Uint64

	mu    sync.Mutex
	stats Stats
	// changed is closed, and replaced, whenever the counts change: Await
	// waits on it.
	changed chan struct{}
	cache   prefixCache
}

// New returns a Server with opts.
func New(opts Options) *Server {
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	s := &Server{opts: opts, mux: http.NewServeMux(), changed: make(chan struct{}), cache: prefixCache{seen: map[uint64]time.Time{}}}
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("POST /chat/completions", s.chat)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /models", s.models)
	s.mux.HandleFunc("POST /v1/messages", s.messages)
	return s
}

// ServeHTTP serves the endpoints listed in the package comment; anything
// else is a 404.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Stats returns a copy of the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Arrivals = slices.Clone(s.stats.Arrivals)
	return st
}

// Await waits until the counts satisfy ok, or ctx ends, and returns the
// counts it last saw. A test that asks what the server has done waits here
// rather than on its client: a client that has given up (timed out, say)
// does not mean the server has had the request yet.
func (s *Server) Await(ctx context.Context, ok func(Stats) bool) (Stats, error) {
	for {
		s.mu.Lock()
		st, changed := s.stats, s.changed
		st.Arrivals = slices.Clone(s.stats.Arrivals)
		s.mu.Unlock()
		if ok(st) {
			return st, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// record updates the counts under the lock.
func (s *Server) record(f func(*Stats)) {
	s.mu.Lock()
	f(&s.stats)
	s.touch()
	s.mu.Unlock()
}

// touch wakes those waiting in Await after the counts changed. s.mu is
// held.
func (s *Server) touch() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// arrive records a completion request's arrival and returns its number,
// from 0.
func (s *Server) arrive() uint64 {
	now := time.Now()
	s.mu.Lock()
	s.stats.Requests++
	s.stats.Arrivals = append(s.stats.Arrivals, now)
	if len(s.stats.Arrivals) > maxArrivals {
		s.stats.Arrivals = slices.Delete(s.stats.Arrivals, 0, len(s.stats.Arrivals)-maxArrivals)
	}
	s.touch()
	s.mu.Unlock()
	return s.count.Add(1) - 1
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   []map[string]any{{"id": "fake-judge", "object": "model", "created": 0, "owned_by": "attune"}},
	})
}

// failure decides how request n fails, if it does: the X-Fake-Fail
// header, then the model's suffix, then the seeded sequence. A re-ask (a
// conversation with an assistant turn) gets a garbage answer from the
// sequence only when RateGarbage is 1, so that a demo shows re-asks
// working.
func (s *Server) failure(r *http.Request, model string, n uint64, reask bool) string {
	switch f := r.Header.Get("X-Fake-Fail"); f {
	case fail429, fail500, failTimeout, failGarbage:
		return f
	}
	for _, f := range []string{fail429, fail500, failTimeout, failGarbage} {
		if strings.HasSuffix(model, "+"+f) {
			return f
		}
	}
	u := unit(mix(uint64(s.opts.Seed), n))
	o := s.opts
	switch {
	case u < o.Rate429:
		return fail429
	case u < o.Rate429+o.Rate500:
		return fail500
	case u < o.Rate429+o.Rate500+o.RateTimeout:
		return failTimeout
	case u < o.Rate429+o.Rate500+o.RateTimeout+o.RateGarbage && (!reask || o.RateGarbage >= 1):
		return failGarbage
	}
	return failNone
}

// wait sleeps d or until the client goes away, and reports whether the
// client is still there.
func wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return r.Context().Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// retryHeaders sets the headers a 429 carries.
func (s *Server) retryHeaders(w http.ResponseWriter) {
	if d := s.opts.RetryAfter; d > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(int64(math.Ceil(d.Seconds()))))
		w.Header().Set("retry-after-ms", fmt.Sprint(d.Milliseconds()))
	}
}

// hang answers a timeout: it waits Timeout, or until the client leaves.
func (s *Server) hang(w http.ResponseWriter, r *http.Request, body func() any) {
	s.record(func(st *Stats) { st.Timeouts++ })
	if wait(r, s.opts.Timeout) {
		writeJSON(w, http.StatusGatewayTimeout, body())
	}
}

// authorized checks the key sent against Options.APIKey.
func (s *Server) authorized(got string) bool {
	return s.opts.APIKey == "" || got == s.opts.APIKey
}

// mask writes a key as OpenAI does in its refusals: the first three and
// last four characters.
func mask(key string) string {
	if len(key) <= 8 {
		return strings.Repeat("*", len(key))
	}
	return key[:3] + strings.Repeat("*", 4) + key[len(key)-4:]
}

// maxBody bounds a request body.
const maxBody = 32 << 20

// decode reads a request's JSON body into v, and the rest of the body
// too: the server notices a client that goes away (as one that times out
// does) only once the body has been read to its end.
func decode(r *http.Request, v any) error {
	err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(v)
	_, _ = io.Copy(io.Discard, r.Body)
	return err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// mix is SplitMix64 of a and b: a counter-based generator, so request n's
// draw depends only on the seed and n.
func mix(a, b uint64) uint64 {
	z := a ^ (b+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// unit maps x to [0, 1).
func unit(x uint64) float64 { return float64(x>>11) / (1 << 53) }

// promptHash hashes the parts of a prompt that decide its answer.
func promptHash(parts ...string) uint64 {
	h := fnv.New64a()
	var n [8]byte
	for _, p := range parts {
		binary.LittleEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return h.Sum64()
}

// tokens estimates the tokens of text at four bytes a token, as the judge
// package's estimate does, and at least one for non-empty text.
func tokens(text string) int { return (len(text) + 3) / 4 }
