package judge

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// Prices are a model's prices in US dollars per million tokens.
type Prices struct {
	InputPerMTok       float64 `json:"input_per_mtok"`
	CachedInputPerMTok float64 `json:"cached_input_per_mtok"`
	OutputPerMTok      float64 `json:"output_per_mtok"`
}

// Cost returns what a call's usage costs in US dollars: input tokens not
// read from the cache at the input price, cached input tokens at the cached
// price only (not also as input), output tokens at the output price.
// Cached tokens beyond the input count are taken as the whole input.
func Cost(u Usage, p Prices) float64 {
	cached := min(max(u.CachedInputTokens, 0), max(u.InputTokens, 0))
	fresh := max(u.InputTokens, 0) - cached
	return (float64(fresh)*p.InputPerMTok +
		float64(cached)*p.CachedInputPerMTok +
		float64(max(u.OutputTokens, 0))*p.OutputPerMTok) / 1e6
}

// EstimateTokens estimates the tokens of text at four characters a token,
// rounded up. It is an estimate for the cost shown before a run, not a
// tokenizer: real counts differ by model and language, and a run's cost is
// taken from the usage the provider reports.
func EstimateTokens(text string) int {
	return (utf8.RuneCountInString(text) + 3) / 4
}

// cacheKeyFields is the canonical encoding CacheKey hashes.
type cacheKeyFields struct {
	Endpoint string `json:"endpoint"`
	Model    string `json:"model"`
	Settings any    `json:"settings"`
	Sample   int    `json:"sample"`
	Prompt   string `json:"prompt"`
}

// CacheKey identifies one call's answer, so that a valid answer is never
// paid for twice: the lower-case hex SHA-256 of the JSON object
// {"endpoint", "model", "settings", "sample", "prompt"} in that order,
// compact, without HTML escaping, settings encoded by encoding/json (struct
// fields in declaration order, map keys sorted). settings should hold what
// changes the answer (temperature, max tokens, seed, log-probabilities,
// structured output), not what does not (concurrency, prices). It panics if
// settings cannot be encoded as JSON (a func or a channel), a programming
// error.
func CacheKey(endpoint, model string, settings any, sample int, promptHash string) string {
	sum := sha256.Sum256(canonicalJSON(cacheKeyFields{
		Endpoint: endpoint, Model: model, Settings: settings, Sample: sample, Prompt: promptHash,
	}))
	return hex.EncodeToString(sum[:])
}
