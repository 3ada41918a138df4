package judge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/store"
)

type providerKey struct {
	provider, baseURL, keyHash string
}

// newProvider builds the client for a judge's endpoint and names the
// endpoint for the cache key. A missing key is a fatal error: the run
// pauses with the reason rather than failing every call.
func (r *Runner) newProvider(j *attune.Judge) (Provider, string, error) {
	if err := checkPolicy(r.opts.Policy, j); err != nil {
		return nil, "", err
	}
	key := ""
	if j.APIKeyEnv != "" {
		key = r.opts.Getenv(j.APIKeyEnv)
		if key == "" {
			return nil, "", &FatalError{Reason: fmt.Sprintf("the environment variable %s, which holds this judge's API key, is not set where the runner works", j.APIKeyEnv)}
		}
	}
	if err := checkBaseURL(j.BaseURL, key != "", r.opts.Insecure); err != nil {
		return nil, "", err
	}
	endpoint := j.Provider + " " + j.BaseURL
	pk := providerKey{j.Provider, j.BaseURL, HashMessages([]Message{{Content: key}})}
	if p, ok := r.providers.Load(pk); ok {
		return p.(Provider), endpoint, nil
	}
	var p Provider
	switch j.Provider {
	case "openai":
		p = NewOpenAI(j.BaseURL, key, r.hc)
	case "anthropic":
		p = NewAnthropic(j.BaseURL, key, r.hc)
	default:
		return nil, "", &FatalError{Reason: fmt.Sprintf("unknown provider %q: use openai or anthropic", j.Provider)}
	}
	p2, _ := r.providers.LoadOrStore(pk, p)
	return p2.(Provider), endpoint, nil
}

// checkBaseURL refuses to send an API key in the clear to another machine,
// by the one notion of this machine every path shares (attune.KeyInClear):
// a prefix test let http://localhost.example.com and http://127.0.0.1.nip.io
// pass as local.
func checkBaseURL(base string, withKey, insecure bool) error {
	if !withKey || insecure || base == "" || !attune.KeyInClear(base) {
		return nil
	}
	return &FatalError{Reason: "the base URL is plain http on another machine; attune will not send an API key unencrypted (use https)"}
}

// callSettings are the request settings that change an answer, for the
// cache key: the same prompt under other settings is another answer.
type callSettings struct {
	Temperature *float64 `json:"temperature,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	Logprobs    bool     `json:"logprobs,omitempty"`
	Structured  bool     `json:"structured,omitempty"`
	Reask       bool     `json:"reask,omitempty"`
}

// settings are the request settings for one rubric item. With log-
// probabilities on, a numeric item is asked for the score alone, as plain
// text: the score must be the first token for its probabilities to be read
// (G-Eval), which structured output would put behind the reasoning.
func (r *Runner) settings(w *itemWork, numeric, reask bool) callSettings {
	s := w.run.Settings
	logprobs := s.Logprobs && w.caps.Logprobs && numeric
	seed := s.Seed
	if !w.caps.Seed {
		seed = nil // an endpoint that refuses the option would refuse every call
	}
	return callSettings{Temperature: s.Temperature, MaxTokens: s.MaxTokens, Seed: seed,
		Logprobs: logprobs, Structured: w.caps.StructuredOutput && !logprobs, Reask: reask}
}

// cacheKey is the cache key of one sample of q, or of its re-ask.
func (r *Runner) cacheKey(w *itemWork, q *question, sample int, reask bool) string {
	key := CacheKey(w.endpoint, w.judge.Model, r.settings(w, q.numeric, reask), sample, q.prompt.Hash)
	if w.tag != "" {
		// A probe's call: its own run's and variant's, never another's.
		sum := sha256.Sum256([]byte(fmt.Sprintf("probe %d %s %s", w.run.ID, w.tag, key)))
		return hex.EncodeToString(sum[:])
	}
	if w.fresh {
		// A sentinel's call is kept under a key of its own run: the
		// record of a call paid for, never served from the cache nor
		// mistaken for the cached answer to the same prompt.
		sum := sha256.Sum256([]byte(fmt.Sprintf("sentinel %d %s", w.run.ID, key)))
		return hex.EncodeToString(sum[:])
	}
	return key
}

// ask is one request of a question: a sample, or the re-ask after it.
type ask struct {
	// msgs are what is sent: the question's prompt, or the re-ask's
	// messages after it.
	msgs   []Message
	sample int
	reask  bool
	// key is the request's cache key (cacheKey).
	key string
}

// call sends one request, from the cache when a valid answer exists,
// otherwise paced, within the judge's concurrency, and retried: waiting out
// Retry-After on 429, exponential backoff with jitter on timeouts and 5xx.
// A call that comes back is stored at once, before its answer is used. It
// returns errStop when the run stopped, a *FatalError that no retry can
// fix, or the last error once the attempts are spent.
func (r *Runner) call(ctx context.Context, w *itemWork, q *question, a ask) (Response, error) {
	def, it, msgs, sample := q.def, q.item, a.msgs, a.sample
	if b, ok := w.cached[a.key]; ok {
		var resp Response
		if err := json.Unmarshal(b, &resp); err == nil {
			return resp, nil
		}
	}
	set := r.settings(w, q.numeric, a.reask)
	req := Request{Model: w.judge.Model, Messages: msgs, Temperature: set.Temperature, MaxTokens: set.MaxTokens, Seed: set.Seed}
	if set.Seed != nil && sample > 0 {
		// Each sample its own seed: the same seed would give the same answer.
		seed := *set.Seed + int64(sample)
		req.Seed = &seed
	}
	if len(def.Items) > 1 {
		// The item's other calls share the dialogue: mark it for providers
		// that cache explicitly.
		req.CachePrefix = q.prompt.Prefix
	}
	if set.Logprobs {
		req.Logprobs, req.TopLogprobs = true, 20
	}
	if set.Structured {
		schema := r.schemaFor(w.rubricVersion, def, it)
		req.Schema = &schema
	}
	estTokens := estimateRequestTokens(msgs, set.MaxTokens)
	var last error
	for attempt := 1; attempt <= r.opts.MaxAttempts; attempt++ {
		if err := r.checkRun(ctx, w); err != nil {
			return Response{}, err
		}
		if s := w.run.Settings; s.RPM > 0 || s.TPM > 0 {
			at, err := r.db.Pace(ctx, w.judge.ID, s.RPM, s.TPM, estTokens)
			if err != nil {
				return Response{}, err
			}
			if err := sleep(ctx, time.Until(at)); err != nil {
				return Response{}, err
			}
		}
		if err := w.limiter.acquire(ctx); err != nil {
			return Response{}, err
		}
		cctx, cancel := context.WithTimeout(ctx, r.opts.CallTimeout)
		t0 := time.Now()
		resp, err := w.prov.Complete(cctx, req)
		lat := time.Since(t0)
		cancel()
		var rl *RateLimitError
		w.limiter.release(errors.As(err, &rl))
		if ctx.Err() != nil {
			return Response{}, ctx.Err()
		}
		if err == nil {
			return resp, r.record(ctx, w, w.callOf(q, a), resp, lat)
		}
		last = err
		var fatal *FatalError
		var wait time.Duration
		switch {
		case errors.As(err, &fatal) && fatal.RequestOnly:
			// This request alone cannot be served (a prompt longer than the
			// model's context): its answer is an ERROR; the run goes on.
			attempt = r.opts.MaxAttempts
			continue
		case errors.As(err, &fatal):
			return Response{}, fatal
		case errors.As(err, &rl):
			wait = max(rl.RetryAfter, r.backoff(attempt))
		default: // transient: 5xx, timeouts, resets
			wait = r.backoff(attempt)
		}
		r.opts.Logger.Debug("judge call retry", "run", w.run.ID, "item", q.itemID, "rubric_item", it.Key, "attempt", attempt, "wait", wait, "err", err)
		if attempt < r.opts.MaxAttempts {
			if err := sleep(ctx, wait); err != nil {
				return Response{}, err
			}
		}
	}
	// Out of attempts: the failure is recorded, and the caller writes an
	// ERROR answer — never a silent drop, never a pass.
	failed := w.callOf(q, a)
	failed.Error = last.Error()
	if err := r.calls.record(ctx, failed); err != nil {
		r.opts.Logger.Error("judge call failure not recorded", "run", w.run.ID, "item", q.itemID, "rubric_item", it.Key, "err", err)
	}
	return Response{}, fmt.Errorf("gave up after %d attempts: %w", r.opts.MaxAttempts, last)
}

// callOf is the record of request a of q, as yet without its outcome.
func (w *itemWork) callOf(q *question, a ask) store.JudgeCall {
	return store.JudgeCall{RunID: w.run.ID, JudgeID: w.judge.ID, ItemID: q.itemID, RubricItemKey: q.item.Key, Sample: a.sample,
		Reask: a.reask, CacheKey: a.key, PromptHash: q.prompt.Hash, Model: w.judge.Model}
}

// record stores call, a request that came back with resp after lat, and
// charges the run; a run over its budget is paused.
func (r *Runner) record(ctx context.Context, w *itemWork, call store.JudgeCall, resp Response, lat time.Duration) error {
	s := w.run.Settings.Prices
	cost := Cost(resp.Usage, Prices{InputPerMTok: s.InputPerMTok, CachedInputPerMTok: s.CachedInputPerMTok, OutputPerMTok: s.OutputPerMTok})
	// The cache needs the answer, its log-probabilities and usage; the
	// provider's whole body would double what each call writes.
	kept := resp
	kept.Raw = ""
	body, _ := json.Marshal(kept)
	call.OK, call.Raw, call.Response = true, resp.Text, body
	call.InputTokens, call.CachedTokens, call.OutputTokens = resp.Usage.InputTokens, resp.Usage.CachedInputTokens, resp.Usage.OutputTokens
	call.CostUSD, call.Latency = cost, lat
	if err := r.calls.record(ctx, call); err != nil {
		return err
	}
	w.mu.Lock()
	capped := w.run.BudgetUSD != nil
	w.mu.Unlock()
	if !capped {
		return nil
	}
	spent, budget, err := r.db.AddRunSpend(ctx, w.run.ID, cost)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.run.SpentUSD, w.run.BudgetUSD = spent, budget
	w.mu.Unlock()
	if budget != nil && spent >= *budget {
		if _, err := r.pauseOverBudget(ctx, w); err != nil {
			return err
		}
	}
	return nil
}

// pauseOverBudget pauses w's run if it has spent its budget as the run
// stands now, and only if w belongs to its current start: a job of an
// earlier start, finishing after the budget was raised and the run resumed,
// must not pause the new start on the budget it read. It reports whether
// it paused the run.
func (r *Runner) pauseOverBudget(ctx context.Context, w *itemWork) (bool, error) {
	paused, err := r.db.PauseRunOverBudget(ctx, w.run.ID, w.run.Generation, func(spent, budget float64) string {
		return fmt.Sprintf("the budget of $%.2f is spent ($%.4f); raise it to go on", budget, spent)
	})
	if paused {
		r.runs.Delete(w.run.ID)
		r.notify(ctx, w.run.ID)
	}
	return paused, err
}

// checkRun stops work for a run that is no longer running. It goes by the
// run as all its items share it, read at most runStatusAge ago, so a pause
// takes effect within a second without a query per call or per item.
func (r *Runner) checkRun(ctx context.Context, w *itemWork) error {
	w.mu.Lock()
	over := w.run.BudgetUSD != nil && w.run.SpentUSD >= *w.run.BudgetUSD
	w.mu.Unlock()
	generation := w.run.Generation
	if over {
		// Say why, rather than leave the run "running" with nothing moving.
		// The budget w read may have been raised since: the pause goes by
		// the run as it stands, and if it does not happen the run is read
		// afresh below.
		paused, err := r.pauseOverBudget(ctx, w)
		if err != nil {
			return err
		}
		if paused {
			return errStop
		}
		generation = 0
	}
	run, err := r.currentRun(ctx, w.run.ID, generation)
	if err != nil {
		return err
	}
	if run.Status != attune.RunRunning || run.Generation != w.run.Generation {
		return errStop
	}
	w.mu.Lock()
	// This item's own spending may be newer than the shared read.
	w.run.SpentUSD, w.run.BudgetUSD = max(w.run.SpentUSD, run.SpentUSD), run.BudgetUSD
	w.mu.Unlock()
	return nil
}

// backoff is the wait before attempt+1: exponential from BaseBackoff,
// capped, with full jitter so that workers do not retry in lockstep.
func (r *Runner) backoff(attempt int) time.Duration {
	d := r.opts.BaseBackoff << min(attempt-1, 16)
	if d <= 0 || d > r.opts.MaxBackoff {
		d = r.opts.MaxBackoff
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func estimateRequestTokens(msgs []Message, maxTokens int) int {
	n := 0
	for _, m := range msgs {
		n += EstimateTokens(m.Content)
	}
	if maxTokens <= 0 {
		maxTokens = 256
	}
	return n + maxTokens
}
