package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// chatRequest is the part of an OpenAI chat-completions request the fake
// reads.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Temperature         *float64 `json:"temperature"`
	MaxTokens           *int     `json:"max_tokens"`
	MaxCompletionTokens *int     `json:"max_completion_tokens"`
	Seed                *int64   `json:"seed"`
	Logprobs            *bool    `json:"logprobs"`
	TopLogprobs         *int     `json:"top_logprobs"`
	N                   *int     `json:"n"`
	Stream              bool     `json:"stream"`
	ResponseFormat      *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
}

// openAIError writes an error in OpenAI's shape.
func openAIError(w http.ResponseWriter, status int, typ, code, param, msg string) {
	e := map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}
	if code != "" {
		e["code"] = code
	}
	if param != "" {
		e["param"] = param
	}
	writeJSON(w, status, map[string]any{"error": e})
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	n := s.arrive()
	key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !s.authorized(key) {
		s.record(func(st *Stats) { st.Unauthorized++ })
		openAIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "",
			fmt.Sprintf("Incorrect API key provided: %s. You can find your API key in the fake's options.", mask(key)))
		return
	}
	var req chatRequest
	if err := decode(r, &req); err != nil {
		s.badRequest(w, "", "We could not parse the JSON body of your request: "+err.Error())
		return
	}
	if req.Model == "missing-model" {
		s.record(func(st *Stats) { st.NotFound++ })
		openAIError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "",
			"The model `missing-model` does not exist or you do not have access to it.")
		return
	}
	switch {
	case req.Model == "":
		s.badRequest(w, "model", "you must provide a model parameter")
		return
	case len(req.Messages) == 0:
		s.badRequest(w, "messages", "messages must not be empty")
		return
	case req.Stream:
		s.badRequest(w, "stream", "the fake does not stream; send stream: false")
		return
	case req.N != nil && *req.N > 1:
		s.badRequest(w, "n", "the fake gives one choice per call; make one call per sample")
		return
	}
	for _, p := range s.opts.Unsupported {
		present := p == "response_format" && req.ResponseFormat != nil ||
			p == "logprobs" && req.Logprobs != nil && *req.Logprobs ||
			p == "top_logprobs" && req.TopLogprobs != nil ||
			p == "seed" && req.Seed != nil ||
			p == "max_tokens" && req.MaxTokens != nil
		if present {
			s.badRequest(w, p, fmt.Sprintf("Unsupported parameter: '%s' is not supported with this model.", p))
			return
		}
	}

	q := question{model: req.Model, forced: r.Header.Get("X-Fake-Answer")}
	for _, m := range req.Messages {
		q.messages = append(q.messages, message{role: m.Role, text: contentText(m.Content)})
	}
	if rf := req.ResponseFormat; rf != nil {
		switch {
		case rf.Type == "json_schema" && rf.JSONSchema != nil:
			q.schema = rf.JSONSchema.Schema
		case rf.Type == "json_object":
			q.jsonObject = true
		}
	}
	if req.Temperature != nil && *req.Temperature > 0 && req.Seed != nil {
		q.sample = fmt.Sprint(*req.Seed)
	}

	fail := s.failure(r, req.Model, n, q.reask())
	if !wait(r, s.opts.Latency) {
		return
	}
	switch fail {
	case fail429:
		s.record(func(st *Stats) { st.RateLimited++ })
		s.retryHeaders(w)
		openAIError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "",
			"Rate limit reached for requests (injected by the fake).")
		return
	case fail500:
		s.record(func(st *Stats) { st.ServerErrors++ })
		openAIError(w, http.StatusInternalServerError, "server_error", "", "",
			"The server had an error while processing your request (injected by the fake).")
		return
	case failTimeout:
		s.hang(w, r, func() any {
			return map[string]any{"error": map[string]any{"message": "the fake timed out", "type": "timeout"}}
		})
		return
	}

	q.oracle = s.opts.Answer
	q.behaviour, q.draw = s.opts.Behaviour, mix(uint64(s.opts.Seed), n^0x5eed)
	if req.Temperature != nil {
		q.temperature = *req.Temperature
	}
	q.turns = s.opts.Turns
	rep := q.answer(fail == failGarbage)
	finish := "stop"
	limit := 0
	if req.MaxTokens != nil {
		limit = *req.MaxTokens
	}
	if req.MaxCompletionTokens != nil {
		limit = *req.MaxCompletionTokens
	}
	if limit > 0 && tokens(rep.text) > limit {
		rep.text, rep.value, finish = rep.text[:limit*4], "", "length"
	}

	var sb strings.Builder
	for _, m := range q.messages {
		sb.WriteString(m.role + ": " + m.text + "\n")
	}
	prompt := sb.String()
	s.mu.Lock()
	cached := s.cache.use(prompt, time.Now())
	if fail == failGarbage {
		s.stats.Garbage++
	} else {
		s.stats.OK++
	}
	s.touch()
	s.mu.Unlock()

	var logprobs any
	if req.Logprobs != nil && *req.Logprobs {
		top := 0
		if req.TopLogprobs != nil {
			top = min(max(*req.TopLogprobs, 0), 20)
		}
		logprobs = map[string]any{"content": tokenLogprobs(rep, top), "refusal": nil}
	}
	in, out := tokens(prompt), max(tokens(rep.text), 1)
	writeJSON(w, http.StatusOK, map[string]any{
		"id":                 fmt.Sprintf("chatcmpl-fake-%016x", promptHash(prompt, rep.text)),
		"object":             "chat.completion",
		"created":            time.Now().Unix(),
		"model":              req.Model,
		"system_fingerprint": "fakellm",
		"choices": []map[string]any{{
			"index":         0,
			"message":       map[string]any{"role": "assistant", "content": rep.text, "refusal": nil},
			"logprobs":      logprobs,
			"finish_reason": finish,
		}},
		"usage": map[string]any{
			"prompt_tokens":             in,
			"completion_tokens":         out,
			"total_tokens":              in + out,
			"prompt_tokens_details":     map[string]any{"cached_tokens": cached / 4},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 0},
		},
	})
}

func (s *Server) badRequest(w http.ResponseWriter, param, msg string) {
	s.record(func(st *Stats) { st.BadRequest++ })
	code := "invalid_request_error"
	if strings.HasPrefix(msg, "Unsupported parameter") {
		code = "unsupported_parameter"
	}
	openAIError(w, http.StatusBadRequest, "invalid_request_error", code, param, msg)
}

// contentText reads a message's content: a string, or an array of parts
// whose text parts are joined.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// tokenLogprobs writes the logprobs of a reply's tokens in OpenAI's shape,
// with top alternatives at each position: the answer's distribution at the
// answer token, the token alone elsewhere.
func tokenLogprobs(rep reply, top int) []map[string]any {
	toks, at := rep.tokenize()
	out := make([]map[string]any, 0, len(toks))
	for i, t := range toks {
		alts := []alternative{{t, -0.01}}
		if i == at {
			alts = slices.Clone(rep.alternatives)
		}
		lp := alts[0].logprob
		var tops []map[string]any
		for _, a := range alts[:min(top, len(alts))] {
			tops = append(tops, map[string]any{"token": a.token, "logprob": a.logprob, "bytes": byteValues(a.token)})
		}
		if tops == nil {
			tops = []map[string]any{}
		}
		out = append(out, map[string]any{"token": t, "logprob": lp, "bytes": byteValues(t), "top_logprobs": tops})
	}
	return out
}

// byteValues writes a token's UTF-8 bytes as OpenAI does: a list of
// integers.
func byteValues(s string) []int {
	out := make([]int, len(s))
	for i := range len(s) {
		out[i] = int(s[i])
	}
	return out
}
