package judge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openAIProvider calls an OpenAI-compatible chat-completions endpoint.
type openAIProvider struct {
	chat openai.ChatCompletionService
	key  string
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
	// The service alone, not openai.NewClient: the client would read
	// OPENAI_API_KEY, OPENAI_BASE_URL and more from the environment, and a
	// judge's key must come only from the variable the judge names.
	return &openAIProvider{chat: openai.NewChatCompletionService(opts...), key: apiKey}
}

// Complete sends one chat completion. With req.Schema it asks for a
// response_format of type json_schema (strict); with req.Logprobs for
// logprobs and top_logprobs. Usage maps prompt_tokens to InputTokens,
// prompt_tokens_details.cached_tokens to CachedInputTokens and
// completion_tokens to OutputTokens.
func (p *openAIProvider) Complete(ctx context.Context, req Request) (Response, error) {
	params, err := p.params(req)
	if err != nil {
		return Response{}, err
	}
	res, err := p.chat.New(ctx, params)
	if err != nil && req.MaxTokens > 0 && !p.completionTokens.Load() && wantsCompletionTokens(err) {
		// The endpoint names the field it wants; switching is not a retry
		// of a failure but the request in the shape the endpoint reads.
		p.completionTokens.Store(true)
		params, _ = p.params(req)
		res, err = p.chat.New(ctx, params)
	}
	if err != nil {
		return Response{}, p.fail(err, req.Model)
	}
	out := Response{Raw: res.RawJSON()}
	out.Usage = Usage{
		InputTokens:       int(res.Usage.PromptTokens),
		CachedInputTokens: int(res.Usage.PromptTokensDetails.CachedTokens),
		OutputTokens:      int(res.Usage.CompletionTokens),
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

func (p *openAIProvider) params(req Request) (openai.ChatCompletionNewParams, error) {
	if req.Model == "" {
		return openai.ChatCompletionNewParams{}, &FatalError{Reason: "the judge names no model"}
	}
	if len(req.Messages) == 0 {
		return openai.ChatCompletionNewParams{}, &FatalError{Reason: "the request has no messages", RequestOnly: true}
	}
	params := openai.ChatCompletionNewParams{Model: shared.ChatModel(req.Model)}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case RoleUser:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		case RoleAssistant:
			params.Messages = append(params.Messages, openai.AssistantMessage(m.Content))
		default:
			return params, &FatalError{Reason: fmt.Sprintf("a message has role %q; want system, user or assistant", m.Role), RequestOnly: true}
		}
	}
	if req.Temperature != nil {
		params.Temperature = openai.Float(*req.Temperature)
	}
	if req.MaxTokens > 0 {
		if p.completionTokens.Load() {
			params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if req.Seed != nil {
		params.Seed = openai.Int(*req.Seed)
	}
	if req.Logprobs {
		params.Logprobs = openai.Bool(true)
		if req.TopLogprobs > 0 {
			params.TopLogprobs = openai.Int(int64(req.TopLogprobs))
		}
	}
	if s := req.Schema; s != nil {
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   s.Name,
					Strict: openai.Bool(true),
					Schema: s.JSON,
				},
			},
		}
	}
	return params, nil
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
