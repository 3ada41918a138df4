package judge_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/attune/attune/internal/judge"
)

const secretKey = "sk-test-0123456789abcdefSECRET"

// reply answers every request with status, headers and body.
func reply(status int, body string, headers ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(headers); i += 2 {
			w.Header().Set(headers[i], headers[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}
}

func simpleRequest() judge.Request {
	return judge.Request{Model: "gpt-test", Messages: []judge.Message{{Role: "user", Content: "Answer YES or NO."}}}
}

// call makes one OpenAI-compatible call to a server running h.
func call(t *testing.T, h http.Handler, hc *http.Client) error {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, err := judge.NewOpenAI(srv.URL+"/v1", secretKey, hc).Complete(context.Background(), simpleRequest())
	if err != nil && strings.Contains(err.Error(), secretKey) {
		t.Errorf("the error's text holds the API key: %v", err)
	}
	return err
}

func TestErrorsAreClassified(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		handler http.Handler
		check   func(t *testing.T, err error)
	}{
		{"429 with Retry-After seconds", reply(429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "Retry-After", "7"),
			wantRateLimit(7 * time.Second)},
		{"429 with retry-after-ms, which wins", reply(429, `{"error":{"message":"slow down"}}`, "Retry-After", "2", "retry-after-ms", "1500"),
			wantRateLimit(1500 * time.Millisecond)},
		{"429 with an HTTP date", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			soon := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
			reply(429, `{}`, "Retry-After", soon)(w, r)
		}), func(t *testing.T, err error) {
			var rl *judge.RateLimitError
			if !errors.As(err, &rl) || rl.RetryAfter < 28*time.Second || rl.RetryAfter > 31*time.Second {
				t.Errorf("error = %#v, want a rate limit of about 30s", err)
			}
		}},
		{"429 without a hint", reply(429, `rate limited`), wantRateLimit(0)},
		{"429 for an exhausted quota is fatal", reply(429, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`),
			wantFatal(429, "quota", "")},
		{"500", reply(500, `{"error":{"message":"The server had an error"}}`), wantTransient("HTTP 500")},
		{"502 HTML page", reply(502, `<html><body><h1>502 Bad Gateway</h1></body></html>`), wantTransient("502 Bad Gateway")},
		{"503 with Retry-After", reply(503, `{"error":{"message":"overloaded"}}`, "Retry-After", "3"), func(t *testing.T, err error) {
			var te *judge.TransientError
			if !errors.As(err, &te) || te.RetryAfter != 3*time.Second {
				t.Errorf("error = %v, want transient with a 3s wait", err)
			}
		}},
		{"529 overloaded", reply(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`), wantTransient("Overloaded")},
		{"401 echoing the key", reply(401, `{"error":{"message":"Incorrect API key provided: `+secretKey+`.","type":"invalid_request_error","code":"invalid_api_key"}}`),
			wantFatal(401, "refused the API key", "")},
		{"403", reply(403, `{"error":{"message":"Project does not have access to model gpt-test"}}`), wantFatal(403, "denied access", "")},
		{"404 unknown model", reply(404, `{"error":{"message":"The model gpt-test does not exist","code":"model_not_found"}}`), wantFatal(404, `does not know the model "gpt-test"`, "")},
		{"404 wrong path", reply(404, `404 page not found`), wantFatal(404, "check the judge's base URL", "")},
		{"400 naming the parameter", reply(400, `{"error":{"message":"logprobs are not supported","type":"invalid_request_error","param":"logprobs","code":"unsupported_parameter"}}`),
			wantFatal(400, "logprobs are not supported", "logprobs")},
		{"400 naming it only in words", reply(400, `{"error":{"message":"Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model."}}`),
			wantFatal(400, "not supported", "response_format")},
		{"vLLM's error shape", reply(400, `{"object":"error","message":"top_logprobs must be at most 5","type":"BadRequestError","param":null,"code":400}`),
			wantFatal(400, "top_logprobs must be at most 5", "top_logprobs")},
		{"Ollama's error shape", reply(404, `{"error":"model \"gpt-test\" not found, try pulling it first"}`), wantFatal(404, "does not know the model", "")},
		{"FastAPI's error shape", reply(422, `{"detail":"seed must be an integer"}`), wantFatal(422, "seed must be an integer", "seed")},
		{"context too long concerns this request only", reply(400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","code":"context_length_exceeded"}}`),
			func(t *testing.T, err error) {
				var fe *judge.FatalError
				if !errors.As(err, &fe) || !fe.RequestOnly || !strings.Contains(fe.Reason, "longer than the model's context") {
					t.Errorf("error = %v, want a request-only fatal error", err)
				}
			}},
		{"a dropped connection", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}), wantTransient("")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := call(t, tc.handler, nil)
			tc.check(t, err)
		})
	}
}

func wantRateLimit(d time.Duration) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var rl *judge.RateLimitError
		if !errors.As(err, &rl) || rl.RetryAfter != d {
			t.Errorf("error = %#v, want a rate limit with RetryAfter %s", err, d)
		}
	}
}

func wantTransient(part string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var te *judge.TransientError
		if !errors.As(err, &te) || !strings.Contains(te.Reason, part) {
			t.Errorf("error = %v, want transient with %q", err, part)
		}
	}
}

func wantFatal(status int, reason, param string) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		var fe *judge.FatalError
		if !errors.As(err, &fe) || fe.Status != status || !strings.Contains(fe.Reason, reason) || fe.Param != param {
			t.Errorf("error = %#v, want fatal %d with %q, param %q", err, status, reason, param)
		}
		if fe != nil && strings.Contains(fe.Reason, secretKey) {
			t.Error("the reason holds the API key")
		}
	}
}

func TestTimeouts(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release) // before the servers close, which wait for handlers
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client going away only once the body is read.
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})

	// The HTTP client's own timeout.
	err := call(t, hang, &http.Client{Timeout: 50 * time.Millisecond})
	var te *judge.TransientError
	if !errors.As(err, &te) || !strings.Contains(te.Reason, "timed out") {
		t.Errorf("client timeout: error = %v, want transient", err)
	}

	// The request's deadline.
	srv := httptest.NewServer(hang)
	t.Cleanup(srv.Close)
	p := judge.NewOpenAI(srv.URL, "", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = p.Complete(ctx, simpleRequest())
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline: error = %v, want transient wrapping DeadlineExceeded", err)
	}

	// The caller's cancellation is not the endpoint's failure: it stays
	// unclassified.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = p.Complete(ctx, simpleRequest())
	var rl *judge.RateLimitError
	var fe *judge.FatalError
	if !errors.Is(err, context.Canceled) || errors.As(err, &te) || errors.As(err, &rl) || errors.As(err, &fe) {
		t.Errorf("cancel: error = %v, want context.Canceled, unclassified", err)
	}
}

func TestConnectionRefused(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = judge.NewOpenAI("http://"+addr+"/v1", secretKey, nil).Complete(context.Background(), simpleRequest())
	var te *judge.TransientError
	if !errors.As(err, &te) || !strings.Contains(te.Reason, "refused the connection") {
		t.Errorf("error = %v, want transient: connection refused", err)
	}
}

// TestServerErrorThenSuccess: a 500 is transient, and the next call (the
// runner's retry) succeeds; the provider itself made one call each time.
func TestServerErrorThenSuccess(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			reply(500, `{"error":{"message":"boom"}}`)(w, r)
			return
		}
		reply(200, `{"id":"x","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"YES"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`)(w, r)
	}))
	t.Cleanup(srv.Close)
	p := judge.NewOpenAI(srv.URL+"/v1", "k", nil)
	_, err := p.Complete(context.Background(), simpleRequest())
	var te *judge.TransientError
	if !errors.As(err, &te) || calls.Load() != 1 {
		t.Fatalf("first call: error %v after %d calls; want transient after one call (no SDK retry)", err, calls.Load())
	}
	resp, err := p.Complete(context.Background(), simpleRequest())
	if err != nil || resp.Text != "YES" || resp.Usage.InputTokens != 10 {
		t.Fatalf("second call = %+v, %v", resp, err)
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	if judge.Classify(nil) != nil {
		t.Error("Classify(nil) != nil")
	}
	fe := &judge.FatalError{Reason: "x"}
	if judge.Classify(fe) != fe {
		t.Error("a sorted error is not returned as it is")
	}
	if err := judge.Classify(context.Canceled); err != context.Canceled {
		t.Errorf("Classify(Canceled) = %v", err)
	}
	var te *judge.TransientError
	if err := judge.Classify(errors.New("odd")); !errors.As(err, &te) {
		t.Errorf("an unknown error is %v, want transient", err)
	}
	var dnsFE *judge.FatalError
	if err := judge.Classify(&net.DNSError{Name: "nowhere.invalid", IsNotFound: true}); !errors.As(err, &dnsFE) || !strings.Contains(dnsFE.Reason, "base URL") {
		t.Errorf("an unknown host is %v, want fatal", err)
	}
}
