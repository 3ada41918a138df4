package fakellm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
)

func start(t *testing.T, opts fakellm.Options) (*fakellm.Server, string) {
	t.Helper()
	f := fakellm.New(opts)
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

var dialogue = []judge.Message{
	{Role: "user", Content: "I keep failing my driving test and I feel like an idiot."},
	{Role: "assistant", Content: "Failing more than once can really knock your confidence. What happened on the last one?"},
	{Role: "user", Content: "I panicked at a roundabout."},
	{Role: "assistant", Content: "Panic in the moment is so common on tests; it says nothing about how capable you are."},
}

func ask(t *testing.T, p judge.Provider, req judge.Request) judge.Response {
	t.Helper()
	resp, err := p.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestBuiltinPromptsAndTheFakeAgree: for every item of every built-in
// rubric the fake finds the allowed answers in the prompt and answers
// in a way Parse reads strictly — the bare answer for these score-only
// prompts, JSON in the item's schema with structured output.
func TestBuiltinPromptsAndTheFakeAgree(t *testing.T) {
	t.Parallel()
	_, url := start(t, fakellm.Options{})
	p := judge.NewOpenAI(url+"/v1", "", nil)
	for _, d := range rubric.Builtins() {
		for i := range d.Items {
			it := &d.Items[i]
			pr, err := judge.Render(d, it, dialogue)
			if err != nil {
				t.Fatal(err)
			}
			resp := ask(t, p, judge.Request{Model: "fake-judge", Messages: pr.Messages})
			a, err := judge.Parse(d, it, resp.Text, false)
			if err != nil || a.Method != judge.MethodParsed || !d.Allows(it, a.Value) {
				t.Errorf("%s %s: text %q parsed as %+v, %v", d.Ref(), it.Key, resp.Text, a, err)
			}
			schema := judge.SchemaFor(d, it)
			resp = ask(t, p, judge.Request{Model: "fake-judge", Messages: pr.Messages, Schema: &schema})
			a, err = judge.Parse(d, it, resp.Text, true)
			if err != nil || a.Method != judge.MethodStructured || !d.Allows(it, a.Value) || a.Reasoning == "" {
				t.Errorf("%s %s: structured %q parsed as %+v, %v", d.Ref(), it.Key, resp.Text, a, err)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	_, url1 := start(t, fakellm.Options{})
	_, url2 := start(t, fakellm.Options{})
	d, _ := rubric.Builtin("empathetic-dialogue@2")
	seen := map[string]bool{}
	for i := range 20 {
		msgs := []judge.Message{{Role: "user", Content: strings.Repeat("x", i) + "\nRate it from 1 to 5 (return the score ONLY)."}}
		a := ask(t, judge.NewOpenAI(url1+"/v1", "", nil), judge.Request{Model: "m", Messages: msgs})
		b := ask(t, judge.NewOpenAI(url2+"/v1", "", nil), judge.Request{Model: "m", Messages: msgs})
		again := ask(t, judge.NewOpenAI(url1+"/v1", "", nil), judge.Request{Model: "m", Messages: msgs})
		if a.Text != b.Text || a.Text != again.Text {
			t.Fatalf("prompt %d: %q, %q, %q; want the same answer every time", i, a.Text, b.Text, again.Text)
		}
		if _, err := judge.Parse(d, &d.Items[0], a.Text, false); err != nil {
			t.Fatal(err)
		}
		seen[a.Text] = true
	}
	if len(seen) < 3 {
		t.Errorf("20 prompts gave only %v; answers should vary with the prompt", seen)
	}

	// Sampling: with a temperature and a seed, the seed varies the answer.
	msgs := []judge.Message{{Role: "user", Content: "Answer YES, NO or NA ONLY."}}
	answers := map[string]bool{}
	for seed := range int64(30) {
		r := ask(t, judge.NewOpenAI(url1+"/v1", "", nil), judge.Request{Model: "m", Messages: msgs, Temperature: ptr(1.0), Seed: ptr(seed)})
		answers[r.Text] = true
	}
	if len(answers) < 2 {
		t.Errorf("30 seeds gave %v; samples should differ", answers)
	}
}

func ptr[T any](v T) *T { return &v }

// withHeader adds the header to every request, or to the first n only.
type withHeader struct {
	key, value string
	n          int32
	sent       atomic.Int32
}

func (h *withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.n == 0 || h.sent.Add(1) <= h.n {
		r = r.Clone(r.Context())
		r.Header.Set(h.key, h.value)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestFailuresAreClassified(t *testing.T) {
	t.Parallel()
	f, url := start(t, fakellm.Options{RetryAfter: 2 * time.Second, Timeout: 10 * time.Second})
	req := judge.Request{Model: "fake-judge", Messages: []judge.Message{{Role: "user", Content: "Answer YES or NO ONLY."}}}
	for _, tc := range []struct {
		fail  string
		check func(error) bool
	}{
		{"429", func(err error) bool {
			var rl *judge.RateLimitError
			return errors.As(err, &rl) && rl.RetryAfter == 2*time.Second
		}},
		{"500", func(err error) bool {
			var te *judge.TransientError
			return errors.As(err, &te)
		}},
		{"timeout", func(err error) bool {
			var te *judge.TransientError
			return errors.As(err, &te) && strings.Contains(te.Reason, "timed out")
		}},
	} {
		for _, how := range []string{"header", "model suffix"} {
			hc := &http.Client{}
			r := req
			if how == "header" {
				hc = &http.Client{Transport: &withHeader{key: "X-Fake-Fail", value: tc.fail}}
			} else {
				r.Model += "+" + tc.fail
			}
			for _, p := range []judge.Provider{judge.NewOpenAI(url+"/v1", "", hc), judge.NewAnthropic(url, "", hc)} {
				ctx := context.Background()
				stop := func() {}
				if tc.fail == "timeout" {
					// The call's deadline passes while the fake hangs, once it
					// is hanging: a deadline of fixed length could pass on a
					// loaded machine before the request even reached it.
					d := newDeadline()
					ctx = d
					hung := f.Stats().Timeouts + 1
					wctx, cancel := context.WithCancel(context.Background())
					stop = cancel
					go func() {
						if _, err := f.Await(wctx, func(st fakellm.Stats) bool { return st.Timeouts >= hung }); err == nil {
							d.pass()
						}
					}()
				}
				start := time.Now()
				if _, err := p.Complete(ctx, r); !tc.check(err) {
					t.Errorf("%s by %s: error %v", tc.fail, how, err)
				}
				stop()
				if time.Since(start) > 5*time.Second {
					t.Errorf("%s by %s took %s", tc.fail, how, time.Since(start))
				}
			}
		}
	}
	st := f.Stats()
	if st.RateLimited != 4 || st.ServerErrors != 4 || st.Timeouts != 4 || st.Requests != 12 || len(st.Arrivals) != 12 {
		t.Errorf("stats %+v", st)
	}
}

// deadline is a context whose deadline passes when the test says so, not
// after a fixed time.
type deadline struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newDeadline() *deadline {
	return &deadline{Context: context.Background(), done: make(chan struct{})}
}

func (d *deadline) Done() <-chan struct{} { return d.done }

func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// pass makes the deadline pass.
func (d *deadline) pass() { d.once.Do(func() { close(d.done) }) }

func TestWrongKey(t *testing.T) {
	t.Parallel()
	const wrong = "sk-wrong-key-0123456789"
	_, url := start(t, fakellm.Options{APIKey: "sk-right"})
	req := judge.Request{Model: "fake-judge", Messages: []judge.Message{{Role: "user", Content: "Answer YES or NO."}}}
	for _, p := range []judge.Provider{judge.NewOpenAI(url+"/v1", wrong, nil), judge.NewAnthropic(url, wrong, nil)} {
		_, err := p.Complete(context.Background(), req)
		var fe *judge.FatalError
		if !errors.As(err, &fe) || fe.Status != 401 || !strings.Contains(fe.Reason, "API key") {
			t.Errorf("error %v, want a fatal 401", err)
		}
		if err != nil && strings.Contains(err.Error(), "0123456789") {
			t.Errorf("the error shows the key: %v", err)
		}
	}
	ask(t, judge.NewOpenAI(url+"/v1", "sk-right", nil), req)
	ask(t, judge.NewAnthropic(url, "sk-right", nil), req)
}

func TestMissingModel(t *testing.T) {
	t.Parallel()
	f, url := start(t, fakellm.Options{})
	req := judge.Request{Model: "missing-model", Messages: []judge.Message{{Role: "user", Content: "Hi"}}}
	for _, p := range []judge.Provider{judge.NewOpenAI(url+"/v1", "", nil), judge.NewAnthropic(url, "", nil)} {
		_, err := p.Complete(context.Background(), req)
		var fe *judge.FatalError
		if !errors.As(err, &fe) || fe.Status != 404 || !strings.Contains(fe.Reason, `"missing-model"`) {
			t.Errorf("error %v, want a fatal 404 naming the model", err)
		}
	}
	if st := f.Stats(); st.NotFound != 2 {
		t.Errorf("stats %+v", st)
	}
}

// TestGarbageThenReAsk: an unreadable answer is re-asked once; the fake
// answers a re-ask properly unless every answer is to be garbage, and then
// the label is ERROR with the raw text kept (the runner's part).
func TestGarbageThenReAsk(t *testing.T) {
	t.Parallel()
	d, _ := rubric.Builtin("coaching-conversation@2.0")
	it, _ := d.Item("CQ8")
	pr, err := judge.Render(d, it, dialogue)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		opts   fakellm.Options
		hc     *http.Client
		wantOK bool
	}{
		{"the first answer garbled", fakellm.Options{}, &http.Client{Transport: &withHeader{key: "X-Fake-Fail", value: "garbage", n: 1}}, true},
		// Seed 0 garbles the first draw at this rate; the sequence is fixed by
		// the seed, so it does every run.
		{"most answers garbled", fakellm.Options{RateGarbage: 0.9}, nil, true},
		{"every answer garbled", fakellm.Options{RateGarbage: 1}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, url := start(t, tc.opts)
			p := judge.NewOpenAI(url+"/v1", "", tc.hc)
			first := ask(t, p, judge.Request{Model: "fake-judge", Messages: pr.Messages})
			_, err := judge.Parse(d, it, first.Text, false)
			var pe *judge.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("first answer %q parsed: %v", first.Text, err)
			}
			if !strings.Contains(pe.Problem, "YES, NO") {
				t.Errorf("problem %q does not name the allowed answers", pe.Problem)
			}
			second := ask(t, p, judge.Request{Model: "fake-judge", Messages: judge.ReAsk(pr, first.Text, pe, d.Allowed(it))})
			a, err := judge.Parse(d, it, second.Text, false)
			if tc.wantOK != (err == nil) {
				t.Fatalf("re-ask answered %q: %+v, %v; want ok %v", second.Text, a, err, tc.wantOK)
			}
			if tc.wantOK && !d.Allows(it, a.Value) {
				t.Errorf("re-ask answer %s is not allowed on CQ8", a.Value)
			}
			if !tc.wantOK && (second.Text == "" || second.Raw == "") {
				t.Error("the raw text of the failed answers must be there to keep")
			}
			st := f.Stats()
			if st.Garbage+st.OK != 2 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestRatesAreReproducible: with the same seed, two servers fail the same
// requests; the shares are near the rates asked for.
func TestRatesAreReproducible(t *testing.T) {
	t.Parallel()
	opts := fakellm.Options{Rate429: 0.2, Rate500: 0.1, RateGarbage: 0.2, Seed: 42}
	outcomes := func() string {
		_, url := start(t, opts)
		var b strings.Builder
		for range 200 {
			res, err := http.Post(url+"/v1/chat/completions", "application/json",
				strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"Answer YES or NO ONLY."}]}`))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			switch {
			case res.StatusCode != 200:
				b.WriteString(res.Status[:3] + " ")
			case strings.Contains(string(body), "hard to say"):
				b.WriteString("garbage ")
			default:
				b.WriteString("ok ")
			}
		}
		return b.String()
	}
	a, b := outcomes(), outcomes()
	if a != b {
		t.Fatal("the same seed gave different failures")
	}
	for _, tc := range []struct {
		word     string
		min, max int
	}{{"429", 25, 55}, {"500", 8, 32}, {"garbage", 25, 55}, {"ok", 75, 125}} {
		if n := strings.Count(a, tc.word+" "); n < tc.min || n > tc.max {
			t.Errorf("%d of 200 were %s; want about %d", n, tc.word, (tc.min+tc.max)/2)
		}
	}
}

func TestLatencyAndArrivals(t *testing.T) {
	t.Parallel()
	f, url := start(t, fakellm.Options{Latency: 30 * time.Millisecond})
	p := judge.NewOpenAI(url+"/v1", "", nil)
	begin := time.Now()
	for range 3 {
		ask(t, p, judge.Request{Model: "m", Messages: []judge.Message{{Role: "user", Content: "Answer YES or NO."}}})
	}
	if took := time.Since(begin); took < 90*time.Millisecond {
		t.Errorf("3 calls took %s, want at least 3 × 30ms", took)
	}
	st := f.Stats()
	if len(st.Arrivals) != 3 || st.OK != 3 || !st.Arrivals[2].After(st.Arrivals[0]) {
		t.Errorf("stats %+v", st)
	}
	if gap := st.Arrivals[1].Sub(st.Arrivals[0]); gap < 30*time.Millisecond {
		t.Errorf("arrivals %s apart; the server measures the rate it sees", gap)
	}
}

// TestPrefixCaching: a second call sharing a long prefix is reported as
// partly cached, as OpenAI reports it.
func TestPrefixCaching(t *testing.T) {
	t.Parallel()
	_, url := start(t, fakellm.Options{})
	p := judge.NewOpenAI(url+"/v1", "", nil)
	d, _ := rubric.Builtin("coaching-conversation@2.0")
	var long []judge.Message
	for range 40 {
		long = append(long, dialogue...)
	}
	var usage []judge.Usage
	for _, key := range []string{"CQ1", "CQ2"} {
		it, _ := d.Item(key)
		pr, err := judge.Render(d, it, long)
		if err != nil {
			t.Fatal(err)
		}
		usage = append(usage, ask(t, p, judge.Request{Model: "m", Messages: pr.Messages}).Usage)
		if key == "CQ2" && usage[1].CachedInputTokens < pr.Prefix/4-128 {
			t.Errorf("cached %d tokens of a %d-byte shared prefix", usage[1].CachedInputTokens, pr.Prefix)
		}
	}
	if usage[0].CachedInputTokens != 0 || usage[1].CachedInputTokens < 1024 || usage[1].CachedInputTokens >= usage[1].InputTokens {
		t.Errorf("usage %+v", usage)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	f, url := start(t, fakellm.Options{Unsupported: []string{"logprobs"}})
	for _, tc := range []struct {
		body, want string
	}{
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":true}`, `"param":"logprobs"`},
		{`{"model":"m","messages":[{"role":"user","content":"hi"}],"n":3}`, `"param":"n"`},
		{`{"model":"m","messages":[]}`, `"param":"messages"`},
		{`{"model":`, `could not parse`},
	} {
		res, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 400 || !strings.Contains(string(body), tc.want) {
			t.Errorf("%s: %d %s", tc.body, res.StatusCode, body)
		}
	}
	if st := f.Stats(); st.BadRequest != 4 {
		t.Errorf("stats %+v", st)
	}
	res, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var models struct {
		Data []struct{ ID string } `json:"data"`
	}
	if json.NewDecoder(res.Body).Decode(&models); len(models.Data) == 0 {
		t.Error("no models listed")
	}
}

// TestAnthropicAgainstTheFake: the Anthropic client's answers from the
// fake's /v1/messages, plain and structured.
func TestAnthropicAgainstTheFake(t *testing.T) {
	t.Parallel()
	_, url := start(t, fakellm.Options{})
	p := judge.NewAnthropic(url, "", nil)
	d, _ := rubric.Builtin("empathetic-dialogue@2")
	for i := range d.Items {
		it := &d.Items[i]
		pr, err := judge.Render(d, it, dialogue[:2])
		if err != nil {
			t.Fatal(err)
		}
		plain := ask(t, p, judge.Request{Model: "claude-fake", Messages: pr.Messages, MaxTokens: 100})
		if a, err := judge.Parse(d, it, plain.Text, false); err != nil || a.Method != judge.MethodParsed {
			t.Errorf("%s: %q → %+v, %v", it.Key, plain.Text, a, err)
		}
		schema := judge.SchemaFor(d, it)
		structured := ask(t, p, judge.Request{Model: "claude-fake", Messages: pr.Messages, Schema: &schema})
		if a, err := judge.Parse(d, it, structured.Text, true); err != nil || a.Method != judge.MethodStructured {
			t.Errorf("%s: %q → %+v, %v", it.Key, structured.Text, a, err)
		}
		if structured.Usage.InputTokens == 0 || !strings.Contains(structured.Raw, `"tool_use"`) {
			t.Errorf("%s: response %+v", it.Key, structured)
		}
	}
}

// TestForcedAnswer: the X-Fake-Answer header makes the fake give that
// answer even where the question does not offer it (NA on CP2), in every
// shape it answers in, over both APIs.
func TestForcedAnswer(t *testing.T) {
	t.Parallel()
	_, url := start(t, fakellm.Options{})
	hc := &http.Client{Transport: &withHeader{key: "X-Fake-Answer", value: "NA"}}
	d, _ := rubric.Builtin("coaching-conversation@2.0")
	it, _ := d.Item("CP2")
	pr, err := judge.Render(d, it, dialogue)
	if err != nil {
		t.Fatal(err)
	}
	schema := judge.SchemaFor(d, it)
	for name, p := range map[string]judge.Provider{"openai": judge.NewOpenAI(url+"/v1", "", hc), "anthropic": judge.NewAnthropic(url, "", hc)} {
		for _, structured := range []bool{false, true} {
			req := judge.Request{Model: "fake-judge", Messages: pr.Messages, MaxTokens: 200}
			if structured {
				req.Schema = &schema
			}
			resp := ask(t, p, req)
			a, err := judge.Parse(d, it, resp.Text, structured)
			if err != nil || a.Value != rubric.NA {
				t.Errorf("%s, structured %v: %q → %+v, %v; want the forced NA", name, structured, resp.Text, a, err)
			}
		}
	}
	// Without the header the fake keeps to the answers offered.
	resp := ask(t, judge.NewOpenAI(url+"/v1", "", nil), judge.Request{Model: "fake-judge", Messages: pr.Messages})
	if a, err := judge.Parse(d, it, resp.Text, false); err != nil || a.Value == rubric.NA {
		t.Errorf("unforced: %q → %+v, %v", resp.Text, a, err)
	}
}

// TestTurns: Options.Turns puts turn evidence beside a structured answer,
// over both APIs, where the schema asks for it, and nowhere else.
func TestTurns(t *testing.T) {
	t.Parallel()
	_, url := start(t, fakellm.Options{
		Answer: func(string, []string) (string, bool) { return "NO", true },
		Turns:  func(_, answer string) []int { return map[string][]int{"NO": {2}}[answer] },
	})
	d, _ := rubric.Builtin("coaching-conversation@2.0")
	it, _ := d.Item("CQ1")
	pr, err := judge.Render(d, it, dialogue)
	if err != nil {
		t.Fatal(err)
	}
	schema := judge.SchemaFor(d, it)
	bare := judge.Schema{Name: "answer_bare", JSON: json.RawMessage(`{"type":"object","properties":{"reasoning":{"type":"string"},"answer":{"type":"string","enum":["YES","NO","NA"]}}}`)}
	for name, p := range map[string]judge.Provider{"openai": judge.NewOpenAI(url+"/v1", "", nil), "anthropic": judge.NewAnthropic(url, "", nil)} {
		resp := ask(t, p, judge.Request{Model: "fake-judge", Messages: pr.Messages, MaxTokens: 200, Schema: &schema})
		if a, err := judge.Parse(d, it, resp.Text, true); err != nil || a.Value != rubric.No || !slices.Equal(a.Turns, []int{2}) {
			t.Errorf("%s: %q → %+v, %v; want NO at turn 2", name, resp.Text, a, err)
		}
		resp = ask(t, p, judge.Request{Model: "fake-judge", Messages: pr.Messages, MaxTokens: 200, Schema: &bare})
		if strings.Contains(resp.Text, "turns") {
			t.Errorf("%s: turns sent where the schema has none: %q", name, resp.Text)
		}
	}
}
