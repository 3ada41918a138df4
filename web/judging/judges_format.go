package judging

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/web/kit"
	judgeview "github.com/attune/attune/web/views/judge"
)

// The judge pages write money, tokens and times in one way throughout.

// usd writes US dollars: cents from ten cents up, and enough places below
// that for a single call's cost to show.
func usd(x float64) string {
	switch {
	case x == 0:
		return "$0.00"
	case x >= 0.1:
		return "$" + kit.Group(fmt.Sprintf("%.2f", x))
	case x >= 0.001:
		return fmt.Sprintf("$%.4f", x)
	}
	return fmt.Sprintf("$%.6f", x)
}

// num writes a number as briefly as it reads back the same.
func num(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// stamp writes a time for the judge pages, in UTC.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// roughly writes a duration as people estimate one: seconds, minutes, or
// hours and minutes.
func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Round(time.Minute)/time.Minute))
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%d h %02d min", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// settingsSummary says in a line how a judge calls its model.
func settingsSummary(s attune.JudgeSettings) string {
	var parts []string
	if s.Temperature != nil {
		parts = append(parts, "temperature "+num(*s.Temperature))
	} else {
		parts = append(parts, "default temperature")
	}
	if s.MaxTokens > 0 {
		parts = append(parts, "at most "+kit.Count(int64(s.MaxTokens))+" tokens an answer")
	}
	if n := s.SampleCount(); n > 1 {
		parts = append(parts, fmt.Sprintf("%d samples", n))
	}
	if s.Logprobs {
		parts = append(parts, "log-probabilities")
	}
	if s.Seed != nil {
		parts = append(parts, "seed "+strconv.FormatInt(*s.Seed, 10))
	}
	parts = append(parts, fmt.Sprintf("%d calls at once", max(s.Concurrency, 1)))
	if s.RPM > 0 {
		parts = append(parts, kit.Count(int64(s.RPM))+" requests/min")
	}
	if s.TPM > 0 {
		parts = append(parts, kit.Count(int64(s.TPM))+" tokens/min")
	}
	return strings.Join(parts, " · ")
}

// pricesSummary writes a judge's prices per million tokens.
func pricesSummary(p attune.Prices) string {
	return fmt.Sprintf("%s input · %s cached · %s output", price(p.InputPerMTok), price(p.CachedInputPerMTok), price(p.OutputPerMTok))
}

func price(x float64) string { return "$" + num(x) }

// capabilitiesView reads the capabilities a run's probe recorded.
func capabilitiesView(raw []byte) judgeview.Capabilities {
	var c judge.Capabilities
	if len(raw) == 0 || string(raw) == "{}" || json.Unmarshal(raw, &c) != nil {
		return judgeview.Capabilities{}
	}
	return capsView(c)
}

func capsView(c judge.Capabilities) judgeview.Capabilities {
	return judgeview.Capabilities{Known: true, StructuredOutput: c.StructuredOutput, Logprobs: c.Logprobs, Seed: c.Seed, Notes: c.Notes}
}

// shares writes an answer distribution as percentages, in the rubric's
// order of answers.
func shares(def *rubric.Definition, d map[string]float64) []judgeview.Share {
	if len(d) == 0 {
		return nil
	}
	var out []judgeview.Share
	seen := map[string]bool{}
	for _, a := range def.Answers {
		if p, ok := d[string(a.Value)]; ok {
			out = append(out, judgeview.Share{Value: string(a.Value), Percent: fmt.Sprintf("%.1f%%", p*100)})
			seen[string(a.Value)] = true
		}
	}
	var rest []string
	for v := range d {
		if !seen[v] {
			rest = append(rest, v)
		}
	}
	slices.Sort(rest)
	for _, v := range rest {
		out = append(out, judgeview.Share{Value: v, Percent: fmt.Sprintf("%.1f%%", d[v]*100)})
	}
	return out
}

// methodOf splits a stored method into the method and whether a re-ask
// produced it ("reasked-parsed").
func methodOf(m string) (string, bool) {
	if rest, ok := strings.CutPrefix(m, "reasked-"); ok {
		return rest, true
	}
	return m, false
}

// itemLabel is a rubric item's label, or its key for one the rubric does
// not have.
func itemLabel(def *rubric.Definition, key string) string {
	if it, ok := def.Item(key); ok && it.Label != "" {
		return it.Label
	}
	return key
}
