package judge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// openAIProvider calls an OpenAI-compatible chat-completions endpoint.
type openAIProvider struct {
	// client sends requests with the options given; it is built as a
	// struct, not by openai.NewClient, which reads the environment.
	client openai.Client
	key    string
	// completionTokens is set once the endpoint has refused max_tokens and
	// asked for max_completion_tokens (OpenAI's reasoning models do);
	// other endpoints know only max_tokens, so that is what is sent first.
	completionTokens atomic.Bool
}

// NewOpenAI returns a Provider for any OpenAI-compatible chat-completions
// endpoint (OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio,
// OpenRouter, a LiteLLM proxy…) at baseURL, such as
// "https://api.openai.com/v1" or "http://localhost:11434/v1"; "" means
// OpenAI's. apiKey is sent as a bearer token and may be empty for local
// servers; it is never logged nor put into an error. hc is the HTTP
// client (its Timeout bounds each call); nil means a client without a
// timeout, leaving the deadline to ctx. The client reads nothing from the
// environment and never retries.
func NewOpenAI(baseURL, apiKey string, hc *http.Client) Provider {
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		option.WithAPIKey(apiKey),
		option.WithMiddleware(catchStatus),
	}
	if baseURL != "" {
		opts = append(opts, option.WithBaseURL(baseURL))
	}
	// Not openai.NewClient: it would read OPENAI_API_KEY, OPENAI_BASE_URL
	// and more from the environment, and a judge's key must come only from
	// the variable the judge names.
	return &openAIProvider{client: openai.Client{Options: opts}, key: apiKey}
}

// Complete sends one chat completion. With req.Schema it asks for a
// response_format of type json_schema (strict); with req.Logprobs for
// logprobs and top_logprobs. Usage maps prompt_tokens to InputTokens,
// prompt_tokens_details.cached_tokens to CachedInputTokens and
// completion_tokens to OutputTokens.
func (p *openAIProvider) Complete(ctx context.Context, req Request) (Response, error) {
	body, err := p.body(req)
	if err != nil {
		return Response{}, err
	}
	// The body goes as written and the response comes back as bytes: the
	// library's reflective encoding and decoding cost more than the rest
	// of a call's own work. Its middleware still sorts errors (catchStatus).
	var raw []byte
	err = p.client.Post(ctx, "chat/completions", json.RawMessage(body), &raw)
	if err != nil && req.MaxTokens > 0 && !p.completionTokens.Load() && wantsCompletionTokens(err) {
		// The endpoint names the field it wants; switching is not a retry
		// of a failure but the request in the shape the endpoint reads.
		p.completionTokens.Store(true)
		body, _ = p.body(req)
		err = p.client.Post(ctx, "chat/completions", json.RawMessage(body), &raw)
	}
	if err != nil {
		return Response{}, p.fail(err, req.Model)
	}
	var res chatResponse
	if err := json.Unmarshal(raw, &res); err != nil {
		return Response{}, p.fail(fmt.Errorf("reading the response: %w", err), req.Model)
	}
	out := Response{Raw: string(raw)}
	out.Usage = Usage{
		InputTokens:       res.Usage.PromptTokens,
		CachedInputTokens: res.Usage.PromptTokensDetails.CachedTokens,
		OutputTokens:      res.Usage.CompletionTokens,
	}
	if len(res.Choices) == 0 {
		// An empty answer, kept with its raw body: parsing it fails and
		// the label records why, rather than the call failing unseen.
		return out, nil
	}
	c := res.Choices[0]
	out.Text = c.Message.Content
	for _, t := range c.Logprobs.Content {
		tl := TokenLogprobs{Token: t.Token, Logprob: t.Logprob}
		for _, a := range t.TopLogprobs {
			tl.Top = append(tl.Top, TokenLogprob{Token: a.Token, Logprob: a.Logprob})
		}
		out.TopLogprobs = append(out.TopLogprobs, tl)
	}
	return out, nil
}

// chatResponse is what the runner reads of a chat completion.
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		Logprobs struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage struct {
		PromptTokens        int `json:"prompt_tokens"`
		CompletionTokens    int `json:"completion_tokens"`
		PromptTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
}

// chatRequest is the body of a chat completion, as the endpoint reads it.
// The runner writes it with encoding/json rather than through the client
// library's parameter types, whose reflective encoding cost more than the
// rest of a call's own work.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Temperature         *float64        `json:"temperature,omitempty"`
	MaxTokens           int             `json:"max_tokens,omitempty"`
	MaxCompletionTokens int             `json:"max_completion_tokens,omitempty"`
	Seed                *int64          `json:"seed,omitempty"`
	Logprobs            bool            `json:"logprobs,omitempty"`
	TopLogprobs         int             `json:"top_logprobs,omitempty"`
	ResponseFormat      *responseFormat `json:"response_format,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type responseFormat struct {
	Type       string         `json:"type"` // json_schema
	JSONSchema responseSchema `json:"json_schema"`
}

type responseSchema struct {
	Name   string          `json:"name"`
	Strict bool            `json:"strict"`
	Schema json.RawMessage `json:"schema"`
}

// body writes req as the endpoint reads it.
func (p *openAIProvider) body(req Request) ([]byte, error) {
	if req.Model == "" {
		return nil, &FatalError{Reason: "the judge names no model"}
	}
	if len(req.Messages) == 0 {
		return nil, &FatalError{Reason: "the request has no messages", RequestOnly: true}
	}
	cr := chatRequest{Model: req.Model, Messages: make([]chatMessage, len(req.Messages)), Temperature: req.Temperature, Seed: req.Seed}
	for i, m := range req.Messages {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant:
			cr.Messages[i] = chatMessage{Role: string(m.Role), Content: m.Content}
		default:
			return nil, &FatalError{Reason: fmt.Sprintf("a message has role %q; want system, user or assistant", m.Role), RequestOnly: true}
		}
	}
	if req.MaxTokens > 0 {
		if p.completionTokens.Load() {
			cr.MaxCompletionTokens = req.MaxTokens
		} else {
			cr.MaxTokens = req.MaxTokens
		}
	}
	if req.Logprobs {
		cr.Logprobs, cr.TopLogprobs = true, req.TopLogprobs
	}
	if s := req.Schema; s != nil {
		cr.ResponseFormat = &responseFormat{Type: "json_schema", JSONSchema: responseSchema{Name: s.Name, Strict: true, Schema: s.JSON}}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the dialogue as written
	if err := enc.Encode(cr); err != nil {
		return nil, &FatalError{err: err, Reason: "the request could not be written", RequestOnly: true}
	}
	return b.Bytes(), nil
}

// fail classifies a call's error, naming the model in a 404 and keeping
// the key out of the text.
func (p *openAIProvider) fail(err error, model string) error {
	var se *statusError
	if errors.As(err, &se) {
		se.model = model
	}
	return redact(Classify(err), p.key)
}

// wantsCompletionTokens reports whether err is a refusal of max_tokens
// that asks for max_completion_tokens.
func wantsCompletionTokens(err error) bool {
	var se *statusError
	if !errors.As(err, &se) || se.status != http.StatusBadRequest {
		return false
	}
	msg, _, param := errorFields(se.body)
	return (param == "max_tokens" || strings.Contains(msg, "max_tokens")) && strings.Contains(msg, "max_completion_tokens")
}
