package judge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// errStop ends an item's work without an answer: the run was paused or
// cancelled (by a person, a fatal error or the budget).
var errStop = errors.New("run stopped")

// itemWork is the state of answering one item.
// Its fields are read-only while the rubric items are answered at once,
// except the run's spending and budget, which mu guards.
type itemWork struct {
	mu            sync.Mutex
	run           *attune.JudgeRun
	rubricVersion int64
	judge         *attune.Judge
	prov          Provider
	endpoint      string
	caps          Capabilities
	cached        map[string][]byte
	limiter       *aimd
	// fresh asks without the cache: a sentinel (see askItem).
	fresh bool
	// tag keys the calls to the run and the tag (variant.tag).
	tag string
	// facts are the labelled item's (rubric.FactsOf), which an answer is
	// held to as a person's is.
	facts rubric.Facts
	// noTurns: the project takes no turn evidence, so the turns a judge
	// names (its schema asks for them on every project) are not stored.
	noTurns bool
}

// workItems answers the job's items not answered yet, one after another,
// each stored as soon as it is done.
func (r *Runner) workItems(ctx context.Context, job *river.Job[itemArgs]) error {
	run, err := r.currentRun(ctx, job.Args.RunID, job.Args.Generation)
	if err != nil {
		return err
	}
	if run.Status != attune.RunRunning || run.Generation != job.Args.Generation {
		return nil // paused, cancelled or restarted: a later start queues what is left
	}
	first, last := job.Args.span()
	todo, err := r.db.RunItemsTodoBetween(ctx, run, first, last)
	if err != nil {
		return err
	}
	if len(todo) == 0 {
		// Every item of the stretch was answered by a job of another
		// start: if they were the run's last, this job is the one left to
		// mark it.
		return r.completeIfDone(ctx, run)
	}
	for i, id := range todo {
		if i > 0 {
			// The run as all its items share it: a pause or cancel stops
			// the rest of the stretch.
			if run, err = r.currentRun(ctx, job.Args.RunID, job.Args.Generation); err != nil {
				return err
			}
			if run.Status != attune.RunRunning || run.Generation != job.Args.Generation {
				return nil
			}
		}
		if err := r.workItem(ctx, run, id); err != nil {
			return r.stop(ctx, run, err)
		}
	}
	return nil
}

// workItem answers every rubric item of one item and stores the answers
// in one transaction. Its error is the stop handles.
func (r *Runner) workItem(ctx context.Context, run *attune.JudgeRun, itemID int64) error {
	start := time.Now()
	labels, err := r.askItem(ctx, run, itemID, false)
	if err != nil {
		return err
	}
	written, completed, err := r.db.WriteJudgeAnswers(ctx, run, itemID, labels, time.Since(start).Milliseconds())
	if err != nil {
		return err
	}
	if completed {
		// The last item: its answers and the run's mark committed together.
		r.runs.Delete(run.ID)
		r.notify(ctx, run.ID)
		return nil
	}
	if written {
		return nil
	}
	// Answered already, by a worker that died before it could see whether
	// the run was done.
	r.notify(ctx, run.ID)
	return r.completeIfDone(ctx, run)
}

// askItem asks the run's judge every rubric item of one item and returns
// its answers, in the rubric's order. Answers paid for before (the same
// prompt, model and settings) are reused, unless fresh: a sentinel asks
// afresh, since a model changed behind its name answers differently.
func (r *Runner) askItem(ctx context.Context, run *attune.JudgeRun, itemID int64, fresh bool) ([]store.JudgeLabel, error) {
	item, err := r.db.FindItem(ctx, run.ProjectID, itemID)
	if err != nil {
		return nil, err
	}
	return r.askDialogue(ctx, run, item, variant{fresh: fresh})
}

// variant is how askDialogue asks an item: as it is, or (for a probe) as
// rewritten, under cache keys of its own.
type variant struct {
	// fresh asks without the cache (a sentinel).
	fresh bool
	// tag, when set, keys the calls to this run and tag alone (a probe's
	// variant and ask), so that they are never served from another's
	// answers nor serve another; a probe's job run again reuses its own.
	tag string
	// messages, when set, are asked instead of the item's own (the turns
	// rewritten, as many and with the same roles); user and assistant,
	// when set, are the speaker names the prompt writes.
	messages        []attune.Message
	user, assistant string
}

// askDialogue is askItem on the item as v asks it.
func (r *Runner) askDialogue(ctx context.Context, run *attune.JudgeRun, item *attune.Item, v variant) ([]store.JudgeLabel, error) {
	rc, err := r.context(ctx, run)
	if err != nil {
		return nil, err
	}
	j, def := rc.judge, rc.def
	if v.user != "" || v.assistant != "" {
		d := *def
		d.Judge.User, d.Judge.Assistant = cmp.Or(v.user, d.Judge.User), cmp.Or(v.assistant, d.Judge.Assistant)
		def = &d
	}
	w := &itemWork{run: run, judge: j, rubricVersion: rc.project.RubricVersionID, limiter: r.limits.get(j.ID, max(run.Settings.Concurrency, 1)),
		fresh: v.fresh, tag: v.tag, noTurns: rc.project.Evidence() == rubric.EvidenceOff}
	if w.prov, w.endpoint, err = r.provider(j); err != nil {
		return nil, err
	}
	if len(run.Capabilities) > 0 {
		json.Unmarshal(run.Capabilities, &w.caps)
	}
	msgs := item.Messages
	if v.messages != nil {
		msgs = v.messages
	}
	dialogue := make([]Message, len(msgs))
	texts := make([]string, len(msgs))
	for i, m := range msgs {
		dialogue[i] = Message{Role: m.Role, Content: m.Content}
		texts[i] = m.Content
	}
	w.facts = rubric.FactsOf(item.Turns, texts, item.Sensitive)

	// Every prompt of the item first, so the cache is asked once.
	// Each sample's cache key is kept for its call, which would otherwise
	// hash it again.
	qs := make([]*question, len(def.Items))
	samples := run.Settings.SampleCount()
	keys := make([]string, 0, len(def.Items)*samples)
	for i := range def.Items {
		prompt, err := Render(def, &def.Items[i], dialogue)
		if err != nil {
			return nil, err
		}
		qs[i] = newQuestion(def, &def.Items[i], item.ID, prompt)
		for s := range samples {
			keys = append(keys, r.cacheKey(w, qs[i], s, false))
		}
	}
	if !w.fresh {
		if w.cached, err = r.db.CachedResponses(ctx, keys); err != nil {
			return nil, err
		}
	}

	// The first rubric item alone, so the provider has the shared prefix
	// (the dialogue) in its cache; then the rest at once, within the
	// judge's concurrency, so an item takes about two calls' time.
	labels := make([]store.JudgeLabel, len(def.Items))
	errs := make([]error, len(def.Items))
	labels[0], errs[0] = r.answer(ctx, w, qs[0], keys[:samples])
	if errs[0] == nil {
		var wg sync.WaitGroup
		wg.Add(len(def.Items) - 1)
		for i := 1; i < len(def.Items); i++ {
			r.pool.Go(func() {
				defer wg.Done()
				labels[i], errs[i] = r.answer(ctx, w, qs[i], keys[i*samples:(i+1)*samples])
			})
		}
		wg.Wait()
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return labels, nil
}

// question is one rubric item of one item as it is asked: what all its
// samples and their re-asks share.
type question struct {
	def    *rubric.Definition
	item   *rubric.Item
	itemID int64
	prompt Prompt
	// allowed are the item's answers; numeric says whether they are all
	// numbers (see isNumeric), which decides the request's settings.
	allowed []rubric.Value
	numeric bool
}

func newQuestion(def *rubric.Definition, it *rubric.Item, itemID int64, prompt Prompt) *question {
	allowed := def.Allowed(it)
	return &question{def: def, item: it, itemID: itemID, prompt: prompt, allowed: allowed, numeric: isNumeric(allowed)}
}

// answer asks for every sample of q and reduces them to one label,
// recording how it was reached. keys are the samples' cache keys.
func (r *Runner) answer(ctx context.Context, w *itemWork, q *question, keys []string) (store.JudgeLabel, error) {
	def, it, prompt, allowed, numeric := q.def, q.item, q.prompt, q.allowed, q.numeric
	structured := r.settings(w, numeric, false).Structured
	var values []rubric.Value
	var methods []string
	// turns are the turn evidence of the samples answered, by index in
	// values.
	turns := map[int][]int{}
	var reasoning, raw string
	// why is what made the last ERROR sample one, kept with an ERROR
	// answer for the lead to read.
	var why string
	var weighted *float64
	var dist map[string]float64
	for s := range w.run.Settings.SampleCount() {
		resp, err := r.call(ctx, w, q, ask{msgs: prompt.Messages, sample: s, key: keys[s]})
		if err != nil {
			if stopping(err) {
				return store.JudgeLabel{}, err
			}
			values, methods, raw, why = append(values, rubric.Error), append(methods, "error"), err.Error(), "the call failed: "+err.Error()
			continue
		}
		ans, perr := ReadAnswer(def, it, resp.Text, structured, w.facts)
		if msgs, ok := ReAskAfter(prompt, resp.Text, perr, allowed); ok {
			// One re-ask naming the problem (an unreadable reply, or an
			// answer the rubric forbids for this dialogue, which is no
			// more stored than a person's would be); then the raw text is
			// kept with an ERROR and the reason, never silently dropped.
			resp2, err := r.call(ctx, w, q, ask{msgs: msgs, sample: s, reask: true, key: r.cacheKey(w, q, s, true)})
			if err != nil {
				if stopping(err) {
					return store.JudgeLabel{}, err
				}
				values, methods, raw = append(values, rubric.Error), append(methods, "error"), resp.Text
				why = notAnswer(perr) + "; the re-ask failed: " + err.Error()
				continue
			}
			if ans, perr = ReadAnswer(def, it, resp2.Text, structured, w.facts); perr != nil {
				values, methods, raw = append(values, rubric.Error), append(methods, "error"), resp.Text+"\n---\n"+resp2.Text
				why = "re-asked once, and still " + notAnswer(perr)
				continue
			}
			ans.Method = "reasked-" + ans.Method
			resp = resp2
		} else if perr != nil {
			return store.JudgeLabel{}, perr
		}
		values, methods = append(values, ans.Value), append(methods, ans.Method)
		turns[len(values)-1] = ans.Turns
		if reasoning == "" {
			reasoning = ans.Reasoning
		}
		raw = resp.Text
		if s == 0 && numeric && len(resp.TopLogprobs) > 0 {
			if score, d, ok := WeightedScore(resp.TopLogprobs, allowed); ok {
				weighted = &score
				dist = map[string]float64{}
				for v, p := range d {
					dist[string(v)] = p
				}
			}
		}
	}
	if w.noTurns {
		clear(turns)
	}
	l := store.JudgeLabel{Key: it.Key, Rationale: reasoning, PromptHash: prompt.Hash, WeightedScore: weighted, Distribution: dist, Raw: raw}
	if len(values) == 1 {
		l.Value, l.Method = string(values[0]), methods[0]
		if weighted != nil && l.Method != "error" {
			l.Method = "logprob"
		}
		if l.Method == "error" {
			l.Reason = why
		}
		l.Evidence = turns[0]
		return l, nil
	}
	v, spread := Aggregate(numeric, values)
	l.Value, l.Method, l.Spread = string(v), "sampled", &spread
	// The evidence of the first sample that gave the value kept, valid
	// for it as it was for that sample; none when the value is an
	// aggregate no sample gave (a median between two).
	for i, x := range values {
		if x == v {
			l.Evidence = turns[i]
			break
		}
	}
	for _, x := range values {
		l.Samples = append(l.Samples, string(x))
	}
	if v == rubric.Error {
		l.Method, l.Reason = "error", why
	}
	return l, nil
}

type schemaKey struct {
	rubricVersion int64
	item          string
}

// schemaFor is SchemaFor, encoded once per rubric version and item. The
// schema depends on the item's key and allowed answers alone, which a
// judge's prompt version does not change.
func (r *Runner) schemaFor(rubricVersion int64, def *rubric.Definition, it *rubric.Item) Schema {
	k := schemaKey{rubricVersion, it.Key}
	if s, ok := r.schemas.Load(k); ok {
		return s.(Schema)
	}
	s := SchemaFor(def, it)
	r.schemas.Store(k, s)
	return s
}

func stopping(err error) bool {
	var fatal *FatalError
	return errors.Is(err, errStop) || errors.As(err, &fatal) || errors.Is(err, context.Canceled)
}

func isNumeric(vs []rubric.Value) bool {
	for _, v := range vs {
		if _, err := strconv.Atoi(string(v)); err != nil {
			return false
		}
	}
	return len(vs) > 0
}
