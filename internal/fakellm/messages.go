package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// messagesRequest is the part of an Anthropic Messages request the fake
// reads.
type messagesRequest struct {
	Model       string          `json:"model"`
	MaxTokens   int             `json:"max_tokens"`
	System      json.RawMessage `json:"system"`
	Temperature *float64        `json:"temperature"`
	Messages    []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
}

// block is one content block of a message or of the system prompt.
type block struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// blocks reads content given as a string or as blocks.
func blocks(raw json.RawMessage) []block {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs)
	return bs
}

// anthropicError writes an error in Anthropic's shape.
func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	n := s.arrive()
	if !s.authorized(r.Header.Get("X-Api-Key")) {
		s.record(func(st *Stats) { st.Unauthorized++ })
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	}
	var req messagesRequest
	if err := decode(r, &req); err != nil {
		s.record(func(st *Stats) { st.BadRequest++ })
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "invalid JSON body: "+err.Error())
		return
	}
	switch {
	case req.Model == "missing-model":
		s.record(func(st *Stats) { st.NotFound++ })
		anthropicError(w, http.StatusNotFound, "not_found_error", "model: missing-model")
		return
	case req.Model == "" || req.MaxTokens <= 0 || len(req.Messages) == 0:
		s.record(func(st *Stats) { st.BadRequest++ })
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "model, max_tokens and messages are required")
		return
	}

	// The prompt as one text, and the part of it up to the last block
	// marked for the cache.
	var all, marked strings.Builder
	q := question{model: req.Model, forced: r.Header.Get("X-Fake-Answer")}
	add := func(role string, bs []block) {
		var text strings.Builder
		for _, b := range bs {
			text.WriteString(b.Text)
			all.WriteString(b.Text)
			if len(b.CacheControl) > 0 && string(b.CacheControl) != "null" {
				marked.Reset()
				marked.WriteString(all.String())
			}
		}
		q.messages = append(q.messages, message{role: role, text: text.String()})
	}
	add("system", blocks(req.System))
	for _, m := range req.Messages {
		add(m.Role, blocks(m.Content))
	}
	tool := ""
	if tc := req.ToolChoice; tc != nil && tc.Type == "tool" {
		for _, t := range req.Tools {
			if t.Name == tc.Name {
				tool, q.schema = t.Name, t.InputSchema
			}
		}
	}

	fail := s.failure(r, req.Model, n, q.reask())
	if !wait(r, s.opts.Latency) {
		return
	}
	switch fail {
	case fail429:
		s.record(func(st *Stats) { st.RateLimited++ })
		s.retryHeaders(w)
		anthropicError(w, http.StatusTooManyRequests, "rate_limit_error", "rate limited (injected by the fake)")
		return
	case fail500:
		s.record(func(st *Stats) { st.ServerErrors++ })
		anthropicError(w, http.StatusInternalServerError, "api_error", "internal error (injected by the fake)")
		return
	case failTimeout:
		s.hang(w, r, func() any {
			return map[string]any{"type": "error", "error": map[string]any{"type": "timeout_error", "message": "the fake timed out"}}
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
	var content []map[string]any
	stop := "end_turn"
	if tool != "" {
		content = []map[string]any{{"type": "tool_use", "id": fmt.Sprintf("toolu_fake_%d", n), "name": tool, "input": json.RawMessage(rep.text)}}
		stop = "tool_use"
	} else {
		content = []map[string]any{{"type": "text", "text": rep.text}}
	}

	prompt := all.String()
	s.mu.Lock()
	read, cached := s.cache.mark(marked.String(), time.Now())
	if fail == failGarbage {
		s.stats.Garbage++
	} else {
		s.stats.OK++
	}
	s.touch()
	s.mu.Unlock()
	in, cacheRead, cacheWrite := tokens(prompt), 0, 0
	if cached {
		p := tokens(marked.String())
		in -= p
		if read {
			cacheRead = p
		} else {
			cacheWrite = p
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id":            fmt.Sprintf("msg_fake_%016x", promptHash(prompt, rep.text)),
		"type":          "message",
		"role":          "assistant",
		"model":         req.Model,
		"content":       content,
		"stop_reason":   stop,
		"stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                max(in, 0),
			"output_tokens":               max(tokens(rep.text), 1),
			"cache_read_input_tokens":     cacheRead,
			"cache_creation_input_tokens": cacheWrite,
		},
	})
}
