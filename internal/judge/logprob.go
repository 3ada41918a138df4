package judge

import (
	"math"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/rubric"
)

// WeightedScore is G-Eval's probability-weighted score. It reads the first
// output token that is not blank — the score itself, when the prompt asks
// for the score alone — and its alternatives (the token itself counts if
// it is not among them). Each alternative that spells an allowed answer
// (ignoring surrounding space and letter case) adds its probability to
// that answer; the probabilities are then renormalised over the allowed
// answers found, giving dist. score is the expectation of the answers'
// numeric values under dist.
//
// ok is false when no allowed answer is among the alternatives (the first
// token is "{" or "Reasoning", say), or when an allowed answer is not a
// number: dist is still returned for categorical answers, but a weighted
// score of YES and NO means nothing.
func WeightedScore(top []TokenLogprobs, allowed []rubric.Value) (score float64, dist map[rubric.Value]float64, ok bool) {
	first := -1
	for i, t := range top {
		if strings.TrimSpace(t.Token) != "" {
			first = i
			break
		}
	}
	if first < 0 {
		return 0, nil, false
	}
	tok := top[first]
	alts := tok.Top
	seen := false
	for _, a := range alts {
		if a.Token == tok.Token {
			seen = true
			break
		}
	}
	if !seen {
		alts = append([]TokenLogprob{{Token: tok.Token, Logprob: tok.Logprob}}, alts...)
	}

	dist = map[rubric.Value]float64{}
	counted := map[string]bool{}
	total := 0.0
	for _, a := range alts {
		if counted[a.Token] || math.IsNaN(a.Logprob) {
			continue
		}
		counted[a.Token] = true
		s := strings.TrimSpace(a.Token)
		for _, v := range allowed {
			if strings.EqualFold(s, string(v)) {
				p := math.Exp(a.Logprob)
				dist[v] += p
				total += p
				break
			}
		}
	}
	if total <= 0 || math.IsInf(total, 0) {
		return 0, nil, false
	}
	numeric := true
	for v := range dist {
		dist[v] /= total
	}
	for _, v := range allowed {
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			numeric = false
			continue
		}
		score += x * dist[v]
	}
	if !numeric {
		return 0, dist, false
	}
	return score, dist, true
}
