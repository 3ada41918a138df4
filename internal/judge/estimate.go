package judge

import (
	"context"

	"github.com/attune/attune/internal/attune"
)

// Estimate is what a run is expected to cost before it starts.
type Estimate struct {
	Items int
	// Sentinels are the project's calibration items, which every run
	// asks as well (see workSentinel); the calls and cost count them.
	Sentinels    int
	Calls        int
	InputTokens  int
	OutputTokens int
	USD          float64
}

// EstimateRun estimates a run of judge j over the first limit items of a
// project (all when limit is 0), and its sentinels (the project's
// calibration items), from the prompts of a sample of its items,
// asked with the judge's prompt version (0 or 1: the rubric's own):
// every call's prompt tokens, and max_tokens (or 256) out. Cached answers
// and re-asks are not counted; the figure is an estimate.
func (r *Runner) EstimateRun(ctx context.Context, j *attune.Judge, p *attune.Project, limit, promptVersion int) (Estimate, error) {
	def, err := r.rubric(ctx, p.RubricVersionID)
	if err != nil {
		return Estimate{}, err
	}
	if promptVersion > 1 {
		jp, err := r.db.FindJudgePrompt(ctx, j.ID, p.RubricVersionID, promptVersion)
		if err != nil {
			return Estimate{}, err
		}
		def = WithPrompts(def, jp.Prompts)
	}
	ids, err := r.db.ItemIDs(ctx, p.ID, limit)
	if err != nil {
		return Estimate{}, err
	}
	sentinels, err := r.db.CountSentinelItems(ctx, p.ID)
	if err != nil {
		return Estimate{}, err
	}
	e := Estimate{Items: len(ids), Sentinels: sentinels}
	if len(ids) == 0 {
		return e, nil
	}
	// A sample spread over the run keeps the estimate cheap for 100,000
	// items and fair when dialogue lengths drift through a file.
	step := max(1, len(ids)/50)
	var sampled, inTokens int
	for i := 0; i < len(ids); i += step {
		item, err := r.db.FindItem(ctx, p.ID, ids[i])
		if err != nil {
			return Estimate{}, err
		}
		dialogue := make([]Message, len(item.Messages))
		for k, m := range item.Messages {
			dialogue[k] = Message{Role: m.Role, Content: m.Content}
		}
		for k := range def.Items {
			pr, err := Render(def, &def.Items[k], dialogue)
			if err != nil {
				return Estimate{}, err
			}
			for _, m := range pr.Messages {
				inTokens += EstimateTokens(m.Content)
			}
		}
		sampled++
	}
	samples := j.Settings.SampleCount()
	// The sentinels' dialogues are taken to be as long as the items'.
	asked := len(ids) + sentinels
	e.Calls = asked * len(def.Items) * samples
	e.InputTokens = inTokens * asked / sampled * samples
	out := j.Settings.MaxTokens
	if out <= 0 {
		out = 256
	}
	e.OutputTokens = e.Calls * out
	pr := j.Settings.Prices
	e.USD = Cost(Usage{InputTokens: e.InputTokens, OutputTokens: e.OutputTokens},
		Prices{InputPerMTok: pr.InputPerMTok, CachedInputPerMTok: pr.CachedInputPerMTok, OutputPerMTok: pr.OutputPerMTok})
	return e, nil
}
