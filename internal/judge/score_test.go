package judge_test

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"testing"

	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
)

var oneToFive = []rubric.Value{"1", "2", "3", "4", "5"}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestWeightedScore(t *testing.T) {
	t.Parallel()
	ln := math.Log
	// The first token is "4" with p=0.6; the alternatives put 0.2 on "3",
	// 0.1 on " 5" (space and all) and 0.1 on a token that is no answer.
	top := []judge.TokenLogprobs{{
		Token: "4", Logprob: ln(0.6),
		Top: []judge.TokenLogprob{{"4", ln(0.6)}, {"3", ln(0.2)}, {" 5", ln(0.1)}, {"The", ln(0.1)}},
	}, {Token: "\n", Logprob: ln(0.9)}}
	score, dist, ok := judge.WeightedScore(top, oneToFive)
	// Renormalised over 0.9: 4 → 2/3, 3 → 2/9, 5 → 1/9;
	// score = 4·2/3 + 3·2/9 + 5·1/9 = 24/9 + 6/9 + 5/9 = 35/9.
	if !ok || !near(score, 35.0/9) || !near(dist["4"], 2.0/3) || !near(dist["3"], 2.0/9) || !near(dist["5"], 1.0/9) || len(dist) != 3 {
		t.Errorf("WeightedScore = %v, %v, %v; want 35/9", score, dist, ok)
	}

	// Leading blank tokens are skipped; the token itself counts when the
	// alternatives leave it out; the same token listed twice counts once.
	top = []judge.TokenLogprobs{
		{Token: " ", Logprob: ln(0.99)},
		{Token: "2", Logprob: ln(0.5), Top: []judge.TokenLogprob{{"1", ln(0.25)}, {"1", ln(0.25)}, {"3", ln(0.25)}}},
	}
	score, dist, ok = judge.WeightedScore(top, oneToFive)
	// 2 → 0.5, 1 → 0.25, 3 → 0.25: score = 1 + 0.25 + 0.75 = 2.
	if !ok || !near(score, 2) || !near(dist["2"], 0.5) || !near(dist["1"], 0.25) {
		t.Errorf("WeightedScore = %v, %v, %v; want 2", score, dist, ok)
	}

	// No answer among the first token's alternatives: no score.
	if _, _, ok := judge.WeightedScore([]judge.TokenLogprobs{{Token: "{", Top: []judge.TokenLogprob{{"{", 0}}}}, oneToFive); ok {
		t.Error("a JSON answer's first token gave a score")
	}
	if _, _, ok := judge.WeightedScore(nil, oneToFive); ok {
		t.Error("no tokens gave a score")
	}
	// Categorical answers: a distribution, but no score.
	_, dist, ok = judge.WeightedScore([]judge.TokenLogprobs{{Token: "YES", Logprob: ln(0.75), Top: []judge.TokenLogprob{{"YES", ln(0.75)}, {"no", ln(0.25)}}}}, []rubric.Value{"YES", "NO", "NA"})
	if ok || !near(dist["YES"], 0.75) || !near(dist["NO"], 0.25) {
		t.Errorf("categorical: %v, %v", dist, ok)
	}
}

func TestAggregate(t *testing.T) {
	t.Parallel()
	v := func(s ...string) []rubric.Value {
		out := make([]rubric.Value, len(s))
		for i, x := range s {
			out[i] = rubric.Value(x)
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		numeric bool
		in      []rubric.Value
		want    rubric.Value
		spread  float64
	}{
		{"majority", false, v("YES", "NO", "YES"), "YES", 1.0 / 3},
		{"unanimous", false, v("NA", "NA"), "NA", 0},
		{"tie goes to the first in sample order", false, v("NO", "YES", "YES", "NO"), "NO", 0.5},
		{"three-way tie", false, v("NA", "YES", "NO"), "NA", 2.0 / 3},
		{"errors left out", false, v("ERROR", "NO", "ERROR"), "NO", 0},
		{"all errors", false, v("ERROR", "ERROR"), "ERROR", 0},
		{"nothing", false, nil, "ERROR", 0},
		{"median", true, v("2", "5", "4"), "4", 3},
		{"even count: lower median", true, v("4", "2", "5", "3"), "3", 3},
		{"median with an error", true, v("3", "ERROR", "3", "4"), "3", 1},
		{"numeric all errors", true, v("ERROR"), "ERROR", 0},
		{"single", true, v("5"), "5", 0},
	} {
		got, spread := judge.Aggregate(tc.numeric, tc.in)
		if got != tc.want || !near(spread, tc.spread) {
			t.Errorf("%s: Aggregate(%v) = %s, %v; want %s, %v", tc.name, tc.in, got, spread, tc.want, tc.spread)
		}
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	p := judge.Prices{InputPerMTok: 2, CachedInputPerMTok: 0.5, OutputPerMTok: 8}
	// 1M input of which 400k cached: 600k·2 + 400k·0.5 + 250k·8 per 1M
	// = 1.2 + 0.2 + 2.0 = 3.4 dollars.
	if got := judge.Cost(judge.Usage{InputTokens: 1_000_000, CachedInputTokens: 400_000, OutputTokens: 250_000}, p); !near(got, 3.4) {
		t.Errorf("Cost = %v, want 3.4", got)
	}
	// More cached than input is taken as all input cached.
	if got := judge.Cost(judge.Usage{InputTokens: 100, CachedInputTokens: 500}, p); !near(got, 100*0.5/1e6) {
		t.Errorf("Cost = %v", got)
	}
	for _, tc := range []struct {
		text string
		want int
	}{{"", 0}, {"abc", 1}, {"abcd", 1}, {"abcde", 2}, {"éééé", 1}} {
		if got := judge.EstimateTokens(tc.text); got != tc.want {
			t.Errorf("EstimateTokens(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

func TestCacheKey(t *testing.T) {
	t.Parallel()
	type settings struct {
		Temperature float64 `json:"temperature"`
		Structured  bool    `json:"structured"`
	}
	s := settings{Temperature: 0, Structured: true}
	key := judge.CacheKey("https://api.openai.com/v1", "gpt-x", s, 2, "abc")
	canonical := `{"endpoint":"https://api.openai.com/v1","model":"gpt-x","settings":{"temperature":0,"structured":true},"sample":2,"prompt":"abc"}`
	sum := sha256.Sum256([]byte(canonical))
	if key != hex.EncodeToString(sum[:]) {
		t.Errorf("CacheKey = %s, want the sha256 of %s", key, canonical)
	}
	for _, other := range []string{
		judge.CacheKey("https://api.openai.com/v1", "gpt-x", s, 1, "abc"),
		judge.CacheKey("https://api.openai.com/v1", "gpt-y", s, 2, "abc"),
		judge.CacheKey("http://localhost/v1", "gpt-x", s, 2, "abc"),
		judge.CacheKey("https://api.openai.com/v1", "gpt-x", settings{Temperature: 1, Structured: true}, 2, "abc"),
		judge.CacheKey("https://api.openai.com/v1", "gpt-x", s, 2, "abd"),
	} {
		if other == key {
			t.Error("a different call has the same key")
		}
	}
}
