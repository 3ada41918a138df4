package judge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
)

// anthropicProvider calls Anthropic's Messages API.
type anthropicProvider struct {
	messages anthropic.MessageService
	key      string
}

// defaultAnthropicMaxTokens is the answer cap sent when a request sets
// none: the Messages API requires one.
const defaultAnthropicMaxTokens = 1024

// NewAnthropic returns a Provider for Anthropic's Messages API at baseURL
// ("" means https://api.anthropic.com; the client adds /v1/messages).
// apiKey is sent as the x-api-key header and never logged nor put into an
// error. hc is the HTTP client (its Timeout bounds each call); nil means a
// client without a timeout. The client reads nothing from the environment
// and never retries.
//
// The Messages API has no token log-probabilities and no seed: a request
// asking for either is refused with a *FatalError naming the parameter,
// without a call, as an endpoint refuses an option it does not know.
// Structured output is a forced tool call whose input schema is the
// request's schema; the tool's input becomes Response.Text. System
// messages go to the system field. Request.CachePrefix marks the shared
// prefix of the first user message with cache_control, so that the calls
// of one conversation read it from Anthropic's prompt cache.
func NewAnthropic(baseURL, apiKey string, hc *http.Client) Provider {
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
	// The service alone, not anthropic.NewClient, which would read keys,
	// profiles and the base URL from the environment.
	return &anthropicProvider{messages: anthropic.NewMessageService(opts...), key: apiKey}
}

// Complete sends one message request. Usage maps input_tokens plus both
// cache counts to InputTokens (Anthropic counts cache reads and writes
// apart from input_tokens), cache_read_input_tokens to CachedInputTokens
// and output_tokens to OutputTokens. Cache writes are counted as input;
// Anthropic bills them a little above the input price.
func (p *anthropicProvider) Complete(ctx context.Context, req Request) (Response, error) {
	params, err := anthropicParams(req)
	if err != nil {
		return Response{}, err
	}
	msg, err := p.messages.New(ctx, params)
	if err != nil {
		var se *statusError
		if errors.As(err, &se) {
			se.model = req.Model
		}
		return Response{}, redact(Classify(err), p.key)
	}
	u := msg.Usage
	out := Response{
		Raw: msg.RawJSON(),
		Usage: Usage{
			InputTokens:       int(u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens),
			CachedInputTokens: int(u.CacheReadInputTokens),
			OutputTokens:      int(u.OutputTokens),
		},
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "tool_use":
			if req.Schema != nil && b.Name == req.Schema.Name {
				out.Text = string(b.Input)
				return out, nil
			}
		case "text":
			text.WriteString(b.Text)
		}
	}
	out.Text = text.String()
	return out, nil
}

func anthropicParams(req Request) (anthropic.MessageNewParams, error) {
	var params anthropic.MessageNewParams
	switch {
	case req.Model == "":
		return params, &FatalError{Reason: "the judge names no model"}
	case req.Logprobs:
		return params, &FatalError{Param: "logprobs", Reason: "Anthropic's Messages API gives no token log-probabilities: turn log-probabilities off for this judge"}
	case req.Seed != nil:
		return params, &FatalError{Param: "seed", Reason: "Anthropic's Messages API takes no seed: remove the seed from this judge's settings"}
	}
	params.Model = req.Model
	params.MaxTokens = int64(req.MaxTokens)
	if params.MaxTokens <= 0 {
		params.MaxTokens = defaultAnthropicMaxTokens
	}
	if req.Temperature != nil {
		params.Temperature = anthropic.Float(*req.Temperature)
	}
	cacheDone := false
	for _, m := range req.Messages {
		switch m.Role {
		case RoleSystem:
			params.System = append(params.System, anthropic.TextBlockParam{Text: m.Content})
		case RoleUser, RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Role == RoleUser && !cacheDone && req.CachePrefix > 0 {
				blocks = cachedBlocks(m.Content, req.CachePrefix)
				cacheDone = true
			} else {
				blocks = []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(m.Content)}
			}
			if m.Role == RoleUser {
				params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
			} else {
				params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
			}
		default:
			return params, &FatalError{Reason: "a message has role " + m.Role + "; want system, user or assistant", RequestOnly: true}
		}
	}
	if len(params.Messages) == 0 {
		return params, &FatalError{Reason: "the request has no user message", RequestOnly: true}
	}
	if s := req.Schema; s != nil {
		var doc struct {
			Properties json.RawMessage `json:"properties"`
			Required   []string        `json:"required"`
		}
		if err := json.Unmarshal(s.JSON, &doc); err != nil {
			return params, &FatalError{Reason: "the answer schema is not valid JSON: " + err.Error(), RequestOnly: true}
		}
		params.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        s.Name,
			Description: anthropic.String("Record your answer: your reasoning first, then the answer."),
			InputSchema: anthropic.ToolInputSchemaParam{
				Properties:  doc.Properties,
				Required:    doc.Required,
				ExtraFields: map[string]any{"additionalProperties": false},
			},
		}}}
		params.ToolChoice = anthropic.ToolChoiceParamOfTool(s.Name)
	}
	return params, nil
}

// cachedBlocks splits content after its first n bytes into two text
// blocks and marks the first for the prompt cache. Anthropic caches
// everything up to a marked block; an n past the end marks the whole
// content, and an n inside a character marks nothing.
func cachedBlocks(content string, n int) []anthropic.ContentBlockParamUnion {
	mark := anthropic.NewCacheControlEphemeralParam()
	switch {
	case n >= len(content):
		b := anthropic.TextBlockParam{Text: content, CacheControl: mark}
		return []anthropic.ContentBlockParamUnion{{OfText: &b}}
	case !utf8.RuneStart(content[n]):
		return []anthropic.ContentBlockParamUnion{anthropic.NewTextBlock(content)}
	}
	head := anthropic.TextBlockParam{Text: content[:n], CacheControl: mark}
	return []anthropic.ContentBlockParamUnion{{OfText: &head}, anthropic.NewTextBlock(content[n:])}
}
