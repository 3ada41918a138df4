package judge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/attune/attune/internal/fakellm"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
)

// capture records the requests a server receives and answers each with
// the next handler, or with the fake.
type capture struct {
	mu     sync.Mutex
	bodies []map[string]any
	heads  []http.Header
	next   http.Handler
}

func (c *capture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var m map[string]any
	json.Unmarshal(body, &m)
	c.mu.Lock()
	c.bodies = append(c.bodies, m)
	c.heads = append(c.heads, r.Header.Clone())
	c.mu.Unlock()
	r.Body = io.NopCloser(strings.NewReader(string(body)))
	c.next.ServeHTTP(w, r)
}

func (c *capture) last() (map[string]any, http.Header) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bodies[len(c.bodies)-1], c.heads[len(c.heads)-1]
}

func (c *capture) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.bodies)
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func ptr[T any](v T) *T { return &v }

// TestOpenAIRequest checks what the OpenAI client sends and how it reads
// the answer, and that it takes nothing from the OPENAI_* environment.
func TestOpenAIRequest(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: 1")
	c := &capture{next: fakellm.New(fakellm.Options{APIKey: "sk-right"})}
	url := serve(t, c)
	d := builtin(t, "empathetic-dialogue@2")
	it := item(t, d, "emotion")
	p, err := judge.Render(d, it, conversation[:2])
	if err != nil {
		t.Fatal(err)
	}
	schema := judge.SchemaFor(d, it)
	resp, err := judge.NewOpenAI(url+"/v1", "sk-right", nil).Complete(context.Background(), judge.Request{
		Model: "fake-judge", Messages: p.Messages, Temperature: ptr(0.0), MaxTokens: 300, Seed: ptr(int64(7)),
		Logprobs: true, TopLogprobs: 5, Schema: &schema,
	})
	if err != nil {
		t.Fatal(err)
	}
	body, head := c.last()
	if head.Get("Authorization") != "Bearer sk-right" || head.Get("X-Leak") != "" {
		t.Errorf("headers: Authorization %q, X-Leak %q", head.Get("Authorization"), head.Get("X-Leak"))
	}
	rf, _ := body["response_format"].(map[string]any)
	js, _ := rf["json_schema"].(map[string]any)
	if body["model"] != "fake-judge" || body["temperature"] != 0.0 || body["max_tokens"] != 300.0 || body["seed"] != 7.0 ||
		body["logprobs"] != true || body["top_logprobs"] != 5.0 || rf["type"] != "json_schema" || js["name"] != "answer_emotion" || js["strict"] != true {
		t.Errorf("request body %v", body)
	}
	msgs, _ := body["messages"].([]any)
	if len(msgs) != 1 || msgs[0].(map[string]any)["content"] != p.Messages[0].Content {
		t.Errorf("messages %v", msgs)
	}
	a, err := judge.Parse(d, it, resp.Text, true)
	if err != nil || a.Method != judge.MethodStructured || a.Reasoning == "" {
		t.Errorf("Parse(%q) = %+v, %v", resp.Text, a, err)
	}
	if resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 || !strings.Contains(resp.Raw, `"chat.completion"`) || len(resp.TopLogprobs) == 0 {
		t.Errorf("response %+v", resp)
	}
}

// TestSchemaKeepsItsOrder: the schema reaches the endpoint with reasoning
// before answer, as SchemaFor wrote it.
func TestSchemaKeepsItsOrder(t *testing.T) {
	t.Parallel()
	var raw string
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		raw = string(b)
		reply(200, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[]}`)(w, r)
	}))
	d := builtin(t, "coaching-conversation@2.0")
	schema := judge.SchemaFor(d, item(t, d, "CQ8"))
	req := simpleRequest()
	req.Schema = &schema
	if _, err := judge.NewOpenAI(url, "", nil).Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(raw, string(schema.JSON)) {
		t.Errorf("the schema was re-encoded:\n%s\nwant it to hold\n%s", raw, schema.JSON)
	}
}

// TestOpenAIMaxCompletionTokens: an endpoint that refuses max_tokens and
// asks for max_completion_tokens gets it, then and on later calls.
func TestOpenAIMaxCompletionTokens(t *testing.T) {
	t.Parallel()
	fake := fakellm.New(fakellm.Options{})
	c := &capture{next: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"max_tokens"`) {
			reply(400, `{"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.","type":"invalid_request_error","param":"max_tokens","code":"unsupported_parameter"}}`)(w, r)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		fake.ServeHTTP(w, r)
	})}
	p := judge.NewOpenAI(serve(t, c)+"/v1", "", nil)
	req := simpleRequest()
	req.MaxTokens = 50
	for i := range 2 {
		if _, err := p.Complete(context.Background(), req); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	if n := c.count(); n != 3 {
		t.Errorf("%d requests, want 3: the refused one, its resend, and the next call", n)
	}
	if body, _ := c.last(); body["max_completion_tokens"] != 50.0 {
		t.Errorf("last body %v", body)
	}
}

// TestAnthropicRequest checks what the Anthropic client sends: the system
// field, the cached prefix as its own block, the schema as a forced tool,
// the key in x-api-key; and that it reads the tool's input and the cache
// counts back.
func TestAnthropicRequest(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-the-environment")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	c := &capture{next: fakellm.New(fakellm.Options{APIKey: "sk-ant-right"})}
	url := serve(t, c)
	d := builtin(t, "coaching-conversation@2.0")
	long := []judge.Message{}
	for range 40 {
		long = append(long, conversation...)
	}
	p := judge.NewAnthropic(url, "sk-ant-right", nil)
	var got []judge.Response
	for _, key := range []string{"CQ1", "CQ8"} {
		it := item(t, d, key)
		pr, err := judge.Render(d, it, long)
		if err != nil {
			t.Fatal(err)
		}
		schema := judge.SchemaFor(d, it)
		msgs := append([]judge.Message{{Role: "system", Content: "You are a careful rater."}}, pr.Messages...)
		resp, err := p.Complete(context.Background(), judge.Request{Model: "claude-fake", Messages: msgs, Schema: &schema, CachePrefix: pr.Prefix})
		if err != nil {
			t.Fatal(err)
		}
		a, err := judge.Parse(d, it, resp.Text, true)
		if err != nil || a.Method != judge.MethodStructured || !d.Allows(it, a.Value) {
			t.Errorf("%s: Parse(%q) = %+v, %v", key, resp.Text, a, err)
		}
		got = append(got, resp)
	}
	body, head := c.last()
	if head.Get("X-Api-Key") != "sk-ant-right" || head.Get("Anthropic-Version") == "" {
		t.Errorf("headers %v", head)
	}
	if body["max_tokens"] != 1024.0 || body["model"] != "claude-fake" {
		t.Errorf("body %v", body)
	}
	if sys, _ := body["system"].([]any); len(sys) != 1 || sys[0].(map[string]any)["text"] != "You are a careful rater." {
		t.Errorf("system %v", body["system"])
	}
	msgs := body["messages"].([]any)
	blocks := msgs[0].(map[string]any)["content"].([]any)
	if len(blocks) != 2 || blocks[0].(map[string]any)["cache_control"] == nil || blocks[1].(map[string]any)["cache_control"] != nil {
		t.Errorf("the shared prefix should be its own block, marked for the cache: %v", blocks)
	}
	tools, _ := body["tools"].([]any)
	choice, _ := body["tool_choice"].(map[string]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "answer_CQ8" || choice["type"] != "tool" || choice["name"] != "answer_CQ8" {
		t.Errorf("tools %v, tool_choice %v", tools, choice)
	}
	schema := tools[0].(map[string]any)["input_schema"].(map[string]any)
	if schema["additionalProperties"] != false || schema["type"] != "object" {
		t.Errorf("input_schema %v", schema)
	}
	// The first call writes the prefix to the cache, the second reads it.
	if got[0].Usage.CachedInputTokens != 0 || got[1].Usage.CachedInputTokens == 0 || got[1].Usage.InputTokens <= got[1].Usage.CachedInputTokens {
		t.Errorf("usage %+v then %+v", got[0].Usage, got[1].Usage)
	}
}

func TestAnthropicRefusesWhatItCannotSend(t *testing.T) {
	t.Parallel()
	c := &capture{next: fakellm.New(fakellm.Options{})}
	p := judge.NewAnthropic(serve(t, c), "", nil)
	for _, tc := range []struct {
		req   judge.Request
		param string
	}{
		{judge.Request{Model: "m", Messages: simpleRequest().Messages, Logprobs: true}, "logprobs"},
		{judge.Request{Model: "m", Messages: simpleRequest().Messages, Seed: ptr(int64(1))}, "seed"},
	} {
		_, err := p.Complete(context.Background(), tc.req)
		var fe *judge.FatalError
		if !errors.As(err, &fe) || fe.Param != tc.param || fe.Status != 0 {
			t.Errorf("error = %v, want a refusal of %s", err, tc.param)
		}
	}
	if c.count() != 0 {
		t.Errorf("%d requests sent; a refused option sends none", c.count())
	}
}

func TestAnthropicErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler http.Handler
		check   func(*testing.T, error)
	}{
		{"429", reply(429, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`, "retry-after", "12"),
			wantRateLimit(12e9)},
		{"401", reply(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`), wantFatal(401, "invalid x-api-key", "")},
		{"404", reply(404, `{"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}`), wantFatal(404, `does not know the model "claude-nope"`, "")},
		{"529", reply(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), wantTransient("Overloaded")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := judge.NewAnthropic(serve(t, tc.handler), secretKey, nil).Complete(context.Background(),
				judge.Request{Model: "claude-nope", Messages: simpleRequest().Messages})
			tc.check(t, err)
		})
	}
}

func TestProbe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		opts        fakellm.Options
		anthropic   bool
		model       string
		wrap        func(http.Handler) http.Handler
		want        judge.Capabilities
		wantErrCode int
	}{
		{name: "everything", want: judge.Capabilities{StructuredOutput: true, Logprobs: true, Seed: true, Calls: 1}},
		{name: "no logprobs", opts: fakellm.Options{Unsupported: []string{"logprobs"}},
			want: judge.Capabilities{StructuredOutput: true, Seed: true, Calls: 2}},
		{name: "nothing", opts: fakellm.Options{Unsupported: []string{"response_format", "logprobs", "seed"}},
			want: judge.Capabilities{Calls: 4}},
		{name: "anthropic", anthropic: true, want: judge.Capabilities{StructuredOutput: true, Calls: 3}},
		{name: "a refusal naming nothing", wrap: refuseSeedVaguely,
			want: judge.Capabilities{StructuredOutput: true, Logprobs: true, Calls: 5}},
		{name: "response_format accepted but ignored", wrap: plainText,
			want: judge.Capabilities{Logprobs: true, Seed: true, Calls: 1}},
		{name: "bad key", opts: fakellm.Options{APIKey: "other"}, wantErrCode: 401},
		{name: "unknown model", model: "missing-model", wantErrCode: 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var h http.Handler = fakellm.New(tc.opts)
			if tc.wrap != nil {
				h = tc.wrap(h)
			}
			url := serve(t, h)
			p := judge.NewOpenAI(url+"/v1", "key", nil)
			if tc.anthropic {
				p = judge.NewAnthropic(url, "key", nil)
			}
			model := tc.model
			if model == "" {
				model = "fake-judge"
			}
			caps, err := judge.Probe(context.Background(), p, model)
			if tc.wantErrCode != 0 {
				var fe *judge.FatalError
				if !errors.As(err, &fe) || fe.Status != tc.wantErrCode || caps.Calls != 1 {
					t.Fatalf("Probe = %+v, %v; want fatal %d after one call", caps, err, tc.wantErrCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if caps.StructuredOutput != tc.want.StructuredOutput || caps.Logprobs != tc.want.Logprobs || caps.Seed != tc.want.Seed || caps.Calls != tc.want.Calls {
				t.Errorf("Probe = %+v, want %+v", caps, tc.want)
			}
			if len(caps.Notes) < 3 {
				t.Errorf("notes %q: want one per option", caps.Notes)
			}
		})
	}
}

// refuseSeedVaguely refuses any request with a seed, naming nothing.
func refuseSeedVaguely(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"seed"`) {
			reply(400, `{"error":{"message":"Invalid request."}}`)(w, r)
			return
		}
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		next.ServeHTTP(w, r)
	})
}

// plainText drops response_format before the fake sees it, as an endpoint
// that ignores unknown fields does.
func plainText(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		delete(body, "response_format")
		b, _ := json.Marshal(body)
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		r.ContentLength = int64(len(b))
		next.ServeHTTP(w, r)
	})
}

// TestWeightedScoreFromTheFake: a score-only prompt with log-probabilities
// gives a weighted score whose likeliest answer is the one the text gives.
func TestWeightedScoreFromTheFake(t *testing.T) {
	t.Parallel()
	d := builtin(t, "empathetic-understanding@1")
	it := &d.Items[0]
	pr, err := judge.Render(d, it, conversation)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := judge.NewOpenAI(serve(t, fakellm.New(fakellm.Options{}))+"/v1", "", nil).Complete(context.Background(),
		judge.Request{Model: "fake-judge", Messages: pr.Messages, Logprobs: true, TopLogprobs: 20})
	if err != nil {
		t.Fatal(err)
	}
	a, err := judge.Parse(d, it, resp.Text, false)
	if err != nil || a.Method != judge.MethodParsed {
		t.Fatalf("Parse(%q) = %+v, %v", resp.Text, a, err)
	}
	score, dist, ok := judge.WeightedScore(resp.TopLogprobs, d.Allowed(it))
	if !ok || score < 1 || score > 5 {
		t.Fatalf("WeightedScore = %v, %v, %v", score, dist, ok)
	}
	best := rubric.Value("")
	for v, p := range dist {
		if best == "" || p > dist[best] {
			best = v
		}
	}
	if best != a.Value {
		t.Errorf("the likeliest answer is %s, the text says %s", best, a.Value)
	}
}
