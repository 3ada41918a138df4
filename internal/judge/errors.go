package judge

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RateLimitError is a 429 from the endpoint: too many requests or tokens
// for now. The runner waits RetryAfter (or its own backoff when it is 0)
// and lowers its rate.
type RateLimitError struct {
	// RetryAfter is how long the endpoint asked to wait, from its
	// retry-after-ms or Retry-After header (seconds or an HTTP date); 0 when
	// it gave none.
	RetryAfter time.Duration
	// Reason is the endpoint's message, for people.
	Reason string
}

// Error says the call was rate limited, with the wait asked for and the
// endpoint's message.
func (e *RateLimitError) Error() string {
	s := "judge: rate limited (HTTP 429)"
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}

// TransientError is a failure that may pass if the call is made again: a
// 5xx, 408 or 409 answer, a timeout (the request's own deadline or the HTTP
// client's), a dropped or refused connection, an unreadable response.
type TransientError struct {
	Reason string
	// RetryAfter is the wait the endpoint asked for, if it named one (a
	// 503 may); 0 otherwise.
	RetryAfter time.Duration
	err        error
}

// Error returns the reason, prefixed.
func (e *TransientError) Error() string { return "judge: transient failure: " + e.Reason }

// Unwrap returns the underlying error, such as context.DeadlineExceeded.
func (e *TransientError) Unwrap() error { return e.err }

// FatalError is a failure that calling again will not mend: a refused API
// key (401, 403), an unknown model or endpoint (404), a request the
// endpoint refuses (400, 422: an unsupported option, a bad parameter), an
// exhausted quota. The run should pause for a lead, who reads Reason: it
// says what to check and never holds the API key.
type FatalError struct {
	Reason string
	// Status is the HTTP status, or 0 for a failure found before or
	// without one (a host that does not resolve, an option the provider
	// cannot send).
	Status int
	// Param is the request parameter the endpoint named as refused, in the
	// OpenAI wire name ("response_format", "logprobs", "top_logprobs",
	// "seed", "max_tokens"), or "" if it named none. Probe uses it.
	Param string
	// RequestOnly is set when the failure concerns this request alone (the
	// prompt is longer than the model's context): other requests may
	// succeed, so the runner can record ERROR for the one label instead of
	// pausing the run.
	RequestOnly bool
	err         error
}

// Error returns the reason, prefixed.
func (e *FatalError) Error() string { return "judge: " + e.Reason }

// Unwrap returns the underlying error, if any.
func (e *FatalError) Unwrap() error { return e.err }

// statusError is an HTTP answer of 400 or more, taken from the response
// before an SDK reads it, so that every endpoint's error shape is read the
// same way.
type statusError struct {
	status int
	header http.Header
	body   []byte
	path   string
	at     time.Time
	// model is the model asked for, set by the provider.
	model string
}

func (e *statusError) Error() string { return fmt.Sprintf("HTTP %d", e.status) }

// maxErrorBody is how much of an error response is read.
const maxErrorBody = 64 << 10

// catchStatus is SDK middleware that turns an HTTP answer of 400 or more
// into a *statusError, with the body read and the response closed.
func catchStatus(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode < 400 {
		return res, err
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	_ = res.Body.Close()
	return nil, &statusError{status: res.StatusCode, header: res.Header, body: body, path: req.URL.Path, at: time.Now()}
}

// Classify sorts an error from a call to a model endpoint into a
// *RateLimitError, a *TransientError or a *FatalError. It returns nil for
// nil, an error already sorted as it is, and an error wrapping
// context.Canceled as it is too: cancellation is the caller's own doing,
// not the endpoint's. A deadline (context.DeadlineExceeded, an HTTP client
// timeout) is transient. An error Classify does not recognise is taken as
// transient, so that the runner's limited retries, not a pause, deal with
// it.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	var (
		rl *RateLimitError
		te *TransientError
		fe *FatalError
		se *statusError
	)
	switch {
	case errors.As(err, &rl), errors.As(err, &te), errors.As(err, &fe):
		return err
	case errors.Is(err, context.Canceled):
		return err
	case errors.As(err, &se):
		return se.classify()
	}
	var (
		nerr     net.Error
		dns      *net.DNSError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		verify   *tls.CertificateVerificationError
	)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return &TransientError{Reason: "the call timed out", err: err}
	case errors.As(err, &dns) && dns.IsNotFound:
		return &FatalError{Reason: fmt.Sprintf("the host %q does not resolve: check the judge's base URL", dns.Name), err: err}
	case errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &verify):
		return &FatalError{Reason: "the endpoint's TLS certificate is not trusted: check the judge's base URL", err: err}
	case errors.As(err, &nerr) && nerr.Timeout():
		return &TransientError{Reason: "the call timed out", err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &TransientError{Reason: "the endpoint refused the connection (is it running, and is the base URL's port right?)", err: err}
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &TransientError{Reason: "the connection was dropped before the answer arrived", err: err}
	}
	return &TransientError{Reason: "the call failed: " + err.Error(), err: err}
}

// classify sorts an HTTP error answer by its status and body.
func (e *statusError) classify() error {
	msg, code, param := errorFields(e.body)
	detail := ""
	if msg != "" {
		detail = ": " + msg
	}
	wait := retryAfter(e.header, e.at)
	status := fmt.Sprintf("HTTP %d %s", e.status, http.StatusText(e.status))
	codeMsg := strings.ToLower(code + " " + msg)
	switch s := e.status; {
	case s == http.StatusTooManyRequests && strings.Contains(codeMsg, "insufficient_quota"):
		return &FatalError{Status: s, err: e,
			Reason: fmt.Sprintf("the account's quota or credit is used up (%s); add credit or raise the limit%s", status, detail)}
	case s == http.StatusTooManyRequests:
		return &RateLimitError{RetryAfter: wait, Reason: msg}
	case s == http.StatusUnauthorized:
		return &FatalError{Status: s, err: e,
			Reason: fmt.Sprintf("the endpoint refused the API key (%s): check the key in the judge's environment variable%s", status, detail)}
	case s == http.StatusForbidden:
		return &FatalError{Status: s, err: e,
			Reason: fmt.Sprintf("the endpoint denied access (%s): the key may lack access to this model or endpoint%s", status, detail)}
	case s == http.StatusNotFound && (strings.Contains(codeMsg, "model") || msg != "" && e.model != "" && strings.Contains(msg, e.model)):
		return &FatalError{Status: s, err: e,
			Reason: fmt.Sprintf("the endpoint does not know the model %q (%s): check the judge's model name%s", e.model, status, detail)}
	case s == http.StatusNotFound:
		return &FatalError{Status: s, err: e,
			Reason: fmt.Sprintf("nothing answers at %s (%s): check the judge's base URL (OpenAI-compatible ones usually end in /v1)%s", e.path, status, detail)}
	case s == http.StatusRequestEntityTooLarge:
		return &FatalError{Status: s, RequestOnly: true, err: e,
			Reason: fmt.Sprintf("the request is too large for the endpoint (%s)%s", status, detail)}
	case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity:
		fe := &FatalError{Status: s, Param: refusedParam(param, msg), err: e,
			Reason: fmt.Sprintf("the endpoint refused the request (%s)%s", status, detail)}
		if tooLong(codeMsg) {
			fe.RequestOnly = true
			fe.Reason = fmt.Sprintf("the prompt is longer than the model's context (%s)%s", status, detail)
		}
		return fe
	case s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooEarly || s >= 500:
		return &TransientError{RetryAfter: wait, err: e, Reason: status + detail}
	}
	return &FatalError{Status: e.status, err: e, Reason: "the endpoint answered " + status + detail}
}

// errorFields reads the message, code (or type) and parameter from the
// error bodies endpoints send: OpenAI's and Anthropic's {"error": {…}},
// Ollama's {"error": "…"}, vLLM's {"message": …, "type": …}, FastAPI's
// {"detail": …}; any other body is taken as text.
func errorFields(body []byte) (msg, code, param string) {
	var doc struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    any             `json:"code"`
		Param   string          `json:"param"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &doc) != nil {
		return clip(stripTags(string(body))), "", ""
	}
	var inner struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
		Param   string `json:"param"`
	}
	var s string
	switch {
	case json.Unmarshal(doc.Error, &inner) == nil && (inner.Message != "" || inner.Type != ""):
		msg, code, param = inner.Message, codeString(inner.Code, inner.Type), inner.Param
	case json.Unmarshal(doc.Error, &s) == nil && s != "":
		msg = s
	case doc.Message != "":
		msg, code, param = doc.Message, codeString(doc.Code, doc.Type), doc.Param
	case json.Unmarshal(doc.Detail, &s) == nil:
		msg = s
	case len(doc.Detail) > 0:
		msg = string(doc.Detail)
	}
	return clip(msg), code, param
}

// codeString joins an error's code (a string or a number) and type.
func codeString(code any, typ string) string {
	switch c := code.(type) {
	case string:
		return strings.TrimSpace(c + " " + typ)
	}
	return typ
}

var reTags = regexp.MustCompile(`<[^>]*>`)

// stripTags reduces an HTML error page to its words.
func stripTags(s string) string { return reTags.ReplaceAllString(s, " ") }

// clip collapses space and cuts a message to a length fit for a status
// line.
func clip(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// knownParams are the request parameters a refusal may name, longest
// first so that "top_logprobs" is not read as "logprobs".
var knownParams = []string{"max_completion_tokens", "response_format", "top_logprobs", "json_schema", "max_tokens", "logprobs", "seed"}

// refusedParam returns the parameter an error names: its param field, or
// the first known parameter its message mentions.
func refusedParam(param, msg string) string {
	if param == "" {
		lower := strings.ToLower(msg)
		for _, p := range knownParams {
			if strings.Contains(lower, p) {
				param = p
				break
			}
		}
	}
	if param == "json_schema" || strings.HasPrefix(param, "response_format.") {
		return "response_format"
	}
	return param
}

// tooLong reports whether an error says the prompt exceeds the context.
func tooLong(s string) bool {
	for _, p := range []string{"context_length_exceeded", "context length", "maximum context", "context window", "prompt is too long", "too many tokens"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// maxRetryAfter caps a wait an endpoint asks for.
const maxRetryAfter = 24 * time.Hour

// retryAfter reads how long an endpoint asks to wait: OpenAI's
// retry-after-ms (milliseconds), else Retry-After in seconds or as an HTTP
// date (counted from now). It returns 0 when there is no usable header.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return min(time.Duration(min(ms, float64(maxRetryAfter/time.Millisecond))*float64(time.Millisecond)), maxRetryAfter)
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return min(time.Duration(min(s, maxRetryAfter.Seconds())*float64(time.Second)), maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}

// reSecret matches strings that look like API keys, which some endpoints
// echo (masked or not) in their error messages.
var reSecret = regexp.MustCompile(`\b(?:sk|pk|rk|key)-[A-Za-z0-9_*.\-]{6,}`)

// redact removes the API key, and anything that looks like one, from the
// text of a classified error.
func redact(err error, key string) error {
	scrub := func(s string) string {
		if key != "" {
			s = strings.ReplaceAll(s, key, "[redacted]")
		}
		return reSecret.ReplaceAllString(s, "[redacted]")
	}
	var (
		rl *RateLimitError
		te *TransientError
		fe *FatalError
	)
	switch {
	case errors.As(err, &rl):
		rl.Reason = scrub(rl.Reason)
	case errors.As(err, &te):
		te.Reason = scrub(te.Reason)
	case errors.As(err, &fe):
		fe.Reason = scrub(fe.Reason)
	}
	return err
}
