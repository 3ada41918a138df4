// Package judge holds the building blocks of the LLM judges: the prompt a
// rubric item gives for one dialogue, the JSON schema of its answer, the
// parsing of what a model answers, the probability-weighted score from
// token log-probabilities, the aggregation of several samples, the clients
// for OpenAI-compatible and Anthropic endpoints behind one Provider
// interface, the classification of their errors, the probe that finds what
// an endpoint supports, cache keys and prices.
//
// Nothing here touches the database or retries a call: retrying, rate
// limits and storage belong to the runner, which drives these pieces. An API
// key is handed to a provider by its caller and is never kept anywhere
// else, logged or put into an error's text. docs/judges.md describes the
// prompts, the parsing rules and the methods a label records.
package judge

import "context"

// Roles of a Message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one message of a conversation: the dialogue being judged, or
// the conversation with the judge. Role is RoleSystem, RoleUser or
// RoleAssistant.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one call to a model. Zero fields are left out of the call, so
// the endpoint's defaults apply.
type Request struct {
	Model    string
	Messages []Message
	// Temperature is the sampling temperature; nil leaves the endpoint's
	// default.
	Temperature *float64
	// MaxTokens caps the tokens of the answer; 0 leaves the endpoint's
	// default (Anthropic requires a cap, and its client uses 1024).
	MaxTokens int
	// Seed asks for reproducible sampling where the endpoint supports it.
	Seed *int64
	// Logprobs asks for the log-probability of each output token, and
	// TopLogprobs for that many alternatives at each position (OpenAI
	// allows up to 20).
	Logprobs    bool
	TopLogprobs int
	// Schema asks for structured output that follows the schema; nil asks
	// for free text.
	Schema *Schema
	// CachePrefix is the number of leading bytes of the first user
	// message's content that other calls share (Prompt.Prefix; a re-ask
	// keeps the prompt's message first). A provider with explicit prompt
	// caching (Anthropic) marks that prefix for its cache; providers that
	// cache prefixes by themselves (OpenAI, vLLM) ignore it. 0 marks
	// nothing. Set it when several calls share the prefix: a cache write
	// costs more than plain input.
	CachePrefix int
}

// Response is a model's answer to one Request.
type Response struct {
	// Text is the answer: the message text, or the JSON of the structured
	// answer (Anthropic's tool input).
	Text string
	// TopLogprobs holds, per output token in order, the token with its
	// log-probability and the alternatives at its position; empty when
	// none were asked for or the endpoint gave none.
	TopLogprobs []TokenLogprobs
	Usage       Usage
	// Raw is the provider's response body, kept for the record.
	Raw string
}

// TokenLogprobs is one output token with its log-probability (natural log)
// and the most likely alternatives at its position, most likely first as
// the endpoint gave them. The token itself is usually among Top.
type TokenLogprobs struct {
	Token   string         `json:"token"`
	Logprob float64        `json:"logprob"`
	Top     []TokenLogprob `json:"top,omitempty"`
}

// TokenLogprob is one candidate token and its log-probability.
type TokenLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
}

// Usage counts the tokens of one call. InputTokens counts every input
// token, cached or not; CachedInputTokens is the part of them read from the
// provider's prompt cache.
type Usage struct {
	InputTokens       int `json:"input_tokens"`
	CachedInputTokens int `json:"cached_input_tokens"`
	OutputTokens      int `json:"output_tokens"`
}

// Add returns the sum of two usages, for totals over a run.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
	}
}

// Provider calls one model endpoint. Complete makes exactly one HTTP call
// (or none, when it refuses an option the endpoint cannot serve) and never
// retries. Every error it returns is a *RateLimitError, a *TransientError
// or a *FatalError, except when ctx is cancelled: then it returns an error
// wrapping context.Canceled, unclassified, as the caller stopped the call.
// Implementations are safe for concurrent use.
type Provider interface {
	Complete(ctx context.Context, req Request) (Response, error)
}

// Capabilities are what an endpoint was found to support by Probe. The run
// records them; they are stored as JSON.
type Capabilities struct {
	StructuredOutput bool `json:"structured_output"`
	Logprobs         bool `json:"logprobs"`
	Seed             bool `json:"seed"`
	// Notes say in words what was found, one finding each, e.g. why an
	// option is unsupported.
	Notes []string `json:"notes,omitempty"`
	// Calls is how many calls the probe made.
	Calls int `json:"calls"`
}
