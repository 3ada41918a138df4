package judge

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
)

// Trial is what a judge answered when tried on one item: the endpoint's
// capabilities as probed, and one TryResult per rubric item, in the
// rubric's order. Nothing of it is stored.
type Trial struct {
	Capabilities Capabilities
	// Failure says why the judge could not be tried at all (its key
	// variable is unset, the endpoint refused the key, the model is
	// unknown); "" when the rubric items were asked. It is written for
	// the lead and never holds the API key.
	Failure string
	Results []TryResult
}

// TryResult is one rubric item asked once.
type TryResult struct {
	Key    string
	Prompt Prompt
	// Raw is the model's reply; ReaskRaw the reply to the one re-ask made
	// when Raw held no readable answer ("" when none was made).
	Raw      string
	ReaskRaw string
	// Value is the answer read, or ERROR; Method says how it was read
	// (MethodStructured, MethodParsed, MethodTolerant, MethodLogprob, with
	// "reasked-" before it after a re-ask), or "error".
	Value     rubric.Value
	Method    string
	Reasoning string
	// Note is Answer.Note: the answer is not allowed on this item.
	Note string
	// WeightedScore and Distribution are set when log-probabilities gave a
	// probability-weighted score.
	WeightedScore *float64
	Distribution  map[rubric.Value]float64
	Usage         Usage
	CostUSD       float64
	Latency       time.Duration
	// Error says why no answer was read: the call failed, the replies were
	// unreadable, or their answer is one the rubric forbids for this
	// dialogue (see RuleError). It never holds the API key.
	Error string
}

// Try asks judge j, as it is now, about one item of project p: it probes
// the endpoint as a run does, then asks every rubric item once (one
// sample, whatever the judge's samples; one re-ask for an unreadable
// reply or a forbidden answer, no retries), with the judge's concurrency
// and request pacing.
// Nothing is stored: no labels, no calls, no spend. It is for a lead to
// check a judge's settings and prompts before paying for a run.
//
// What the endpoint or the judge's settings got wrong is reported in the
// Trial (Failure, TryResult.Error), in words fit to show; the returned
// error is for attune's own failures (the item or rubric cannot be read)
// and ctx being cancelled (past its deadline, Try returns what it has,
// the rest marked as not asked). The key is read from the judge's variable as a run reads
// it, and is scrubbed from every text returned in case an endpoint echoes
// it.
func (r *Runner) Try(ctx context.Context, j *attune.Judge, p *attune.Project, itemID int64) (Trial, error) {
	def, err := r.rubric(ctx, p.RubricVersionID)
	if err != nil {
		return Trial{}, err
	}
	item, err := r.db.FindItem(ctx, p.ID, itemID)
	if err != nil {
		return Trial{}, err
	}
	scrub := keyScrubber(r.opts.Getenv, j.APIKeyEnv)
	var t Trial
	prov, _, err := r.provider(j)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, r.opts.CallTimeout)
		t.Capabilities, err = Probe(pctx, prov, j.Model)
		cancel()
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return Trial{}, ctx.Err()
		}
		t.Failure = scrub(reason(err))
		return t, nil
	}
	for i, n := range t.Capabilities.Notes {
		t.Capabilities.Notes[i] = scrub(n)
	}

	dialogue := make([]Message, len(item.Messages))
	texts := make([]string, len(item.Messages))
	for i, m := range item.Messages {
		dialogue[i] = Message{Role: m.Role, Content: m.Content}
		texts[i] = m.Content
	}
	// A run's settings are the judge's settings as they are now; the
	// item work carries them into the same request rules a run follows,
	// and the item's facts into the same rules for its answers.
	w := &itemWork{run: &attune.JudgeRun{Settings: j.Settings}, judge: j, prov: prov, caps: t.Capabilities,
		facts: rubric.FactsOf(item.Turns, texts, item.Sensitive)}
	t.Results = make([]TryResult, len(def.Items))
	sem := make(chan struct{}, max(1, min(j.Settings.Concurrency, len(def.Items))))
	var wg sync.WaitGroup
	for i := range def.Items {
		it := &def.Items[i]
		t.Results[i].Key = it.Key
		prompt, err := Render(def, it, dialogue)
		if err != nil {
			t.Results[i].Value, t.Results[i].Method, t.Results[i].Error = rubric.Error, "error", err.Error()
			continue
		}
		t.Results[i].Prompt = prompt
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				t.Results[i].Value, t.Results[i].Method = rubric.Error, "error"
				t.Results[i].Error = "not asked: the try ran out of time"
				return
			}
			defer func() { <-sem }()
			r.tryItem(ctx, w, newQuestion(def, it, itemID, prompt), &t.Results[i])
		})
	}
	wg.Wait()
	// Past a deadline the items not answered say so; a caller that went
	// away wants nothing.
	if errors.Is(ctx.Err(), context.Canceled) {
		return Trial{}, ctx.Err()
	}
	for i := range t.Results {
		res := &t.Results[i]
		res.Raw, res.ReaskRaw, res.Reasoning, res.Error = scrub(res.Raw), scrub(res.ReaskRaw), scrub(res.Reasoning), scrub(res.Error)
	}
	return t, nil
}

// tryItem asks q as a run's first sample would be asked, and reads the
// answer, re-asking once if it cannot be read.
func (r *Runner) tryItem(ctx context.Context, w *itemWork, q *question, res *TryResult) {
	def, it, allowed, numeric := q.def, q.item, q.allowed, q.numeric
	set := r.settings(w, numeric, false)
	fail := func(msg string) {
		res.Value, res.Method, res.Error = rubric.Error, "error", msg
	}
	resp, err := r.tryCall(ctx, w, q, ask{msgs: q.prompt.Messages}, res)
	if err != nil {
		fail(reason(err))
		return
	}
	res.Raw = resp.Text
	ans, perr := ReadAnswer(def, it, resp.Text, set.Structured, w.facts)
	if msgs, ok := ReAskAfter(res.Prompt, resp.Text, perr, allowed); ok {
		resp2, err := r.tryCall(ctx, w, q, ask{msgs: msgs, reask: true}, res)
		if err != nil {
			fail(notAnswer(perr) + "; the re-ask failed: " + reason(err))
			return
		}
		res.ReaskRaw = resp2.Text
		if ans, perr = ReadAnswer(def, it, resp2.Text, set.Structured, w.facts); perr != nil {
			fail("re-asked once, and still " + notAnswer(perr))
			return
		}
		ans.Method = "reasked-" + ans.Method
	} else if perr != nil {
		fail(perr.Error())
		return
	}
	res.Value, res.Method, res.Reasoning, res.Note = ans.Value, ans.Method, ans.Reasoning, ans.Note
	if numeric && len(resp.TopLogprobs) > 0 {
		if score, d, ok := WeightedScore(resp.TopLogprobs, allowed); ok {
			res.WeightedScore, res.Distribution = &score, d
			if !strings.HasPrefix(res.Method, "reasked-") {
				res.Method = MethodLogprob
			}
		}
	}
}

// tryCall makes request a of q as Runner.call builds it (settings, schema,
// log-probabilities, cache prefix), paced by the judge's limits, without
// the cache, retries or a record (a's sample and key go unused). Its
// usage, cost and latency are added to res.
func (r *Runner) tryCall(ctx context.Context, w *itemWork, q *question, a ask, res *TryResult) (Response, error) {
	def, it, msgs, prompt := q.def, q.item, a.msgs, q.prompt
	set := r.settings(w, q.numeric, a.reask)
	req := Request{Model: w.judge.Model, Messages: msgs, Temperature: set.Temperature, MaxTokens: set.MaxTokens, Seed: set.Seed}
	if len(def.Items) > 1 {
		req.CachePrefix = prompt.Prefix
	}
	if set.Logprobs {
		req.Logprobs, req.TopLogprobs = true, 20
	}
	if set.Structured {
		schema := SchemaFor(def, it)
		req.Schema = &schema
	}
	if s := w.judge.Settings; s.RPM > 0 || s.TPM > 0 {
		at, err := r.db.Pace(ctx, w.judge.ID, s.RPM, s.TPM, estimateRequestTokens(msgs, set.MaxTokens))
		if err != nil {
			return Response{}, err
		}
		if err := sleep(ctx, time.Until(at)); err != nil {
			return Response{}, err
		}
	}
	cctx, cancel := context.WithTimeout(ctx, r.opts.CallTimeout)
	defer cancel()
	t0 := time.Now()
	resp, err := w.prov.Complete(cctx, req)
	res.Latency += time.Since(t0)
	if err != nil {
		return Response{}, err
	}
	pr := w.judge.Settings.Prices
	res.Usage = res.Usage.Add(resp.Usage)
	res.CostUSD += Cost(resp.Usage, Prices{InputPerMTok: pr.InputPerMTok, CachedInputPerMTok: pr.CachedInputPerMTok, OutputPerMTok: pr.OutputPerMTok})
	return resp, nil
}

// reason is an error as a lead reads it: the endpoint's classified reason
// without the package prefix. Errors of the judge package never hold the
// key; anything else is classified first so that raw transport errors
// read the same way.
func reason(err error) string {
	var fe *FatalError
	if errors.As(err, &fe) {
		return fe.Reason
	}
	return strings.TrimPrefix(Classify(err).Error(), "judge: ")
}

// keyScrubber returns a func that blanks the judge's API key out of a
// text. Keys too short to be told from ordinary words are left alone;
// such a key protects nothing anyway.
func keyScrubber(getenv func(string) string, env string) func(string) string {
	key := ""
	if env != "" {
		key = getenv(env)
	}
	if len(key) < 8 {
		return func(s string) string { return s }
	}
	return func(s string) string { return strings.ReplaceAll(s, key, "[API key]") }
}
