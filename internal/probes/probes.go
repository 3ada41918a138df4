// Package probes reads a judge's robustness probes (runs of the kind
// attune.RunProbe, worked by internal/judge) into their results: the
// retest, each neutral rewrite and the length probe per rubric item, by
// the statistics of internal/probe and internal/failmap, against the
// project's thresholds. The certification (the report, the judge's
// probes page, the JSON API and the command line) shows them beside the
// alternative annotator test, through probe.Certify.
package probes

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/failmap"
	"github.com/attune/attune/internal/probe"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// Store is what reading a probe needs; *store.DB satisfies it.
type Store interface {
	FindRubricByID(ctx context.Context, id int64) (*rubric.Definition, error)
	FindItem(ctx context.Context, projectID, itemID int64) (*attune.Item, error)
	ProbeAnswers(ctx context.Context, runID int64) ([]store.ProbeAnswer, error)
	ProbePeople(ctx context.Context, projectID int64) (map[int64]map[string][]string, error)
	ProbeThresholds(ctx context.Context, projectID int64) (probe.Thresholds, error)
	LatestProbes(ctx context.Context, projectID int64) ([]*attune.JudgeRun, error)
}

var _ Store = (*store.DB)(nil)

// Result is one probe's results.
type Result struct {
	Run        Run              `json:"run"`
	Thresholds probe.Thresholds `json:"thresholds"`
	// Items are the calibration items with at least one answer.
	Items   int           `json:"n_items"`
	Summary probe.Summary `json:"summary"`
	// Unstable is whether a probe failed its threshold; Failed says which.
	Unstable bool     `json:"unstable"`
	Failed   []string `json:"failed"`
}

// Run is what a result says of its probe run.
type Run struct {
	ID            int64            `json:"id"`
	JudgeID       int64            `json:"judge_id"`
	Judge         string           `json:"judge"`
	RaterID       int64            `json:"rater"`
	PromptVersion int              `json:"prompt_version"`
	K             int              `json:"k"`
	Status        attune.RunStatus `json:"status"`
	Reason        string           `json:"reason,omitempty"`
	SpentUSD      float64          `json:"spent_usd"`
	CreatedAt     time.Time        `json:"created_at"`
	FinishedAt    *time.Time       `json:"finished_at,omitempty"`
}

// Read computes the results of probe run over project p's rubric, with
// the project's thresholds as they are now. A probe not yet finished reads
// as far as it has come.
func Read(ctx context.Context, db Store, p *attune.Project, run *attune.JudgeRun) (*Result, error) {
	def, err := db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return nil, err
	}
	t, err := db.ProbeThresholds(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	answers, err := db.ProbeAnswers(ctx, run.ID)
	if err != nil {
		return nil, err
	}
	people, err := db.ProbePeople(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	// by item: the asks of the dialogue as it is, in order, and each
	// rewrite's answers.
	type itemAnswers struct {
		asks     []map[string]string
		rewrites map[string]map[string]string
	}
	byItem := map[int64]*itemAnswers{}
	var order []int64
	for _, a := range answers {
		ia := byItem[a.ItemID]
		if ia == nil {
			ia = &itemAnswers{rewrites: map[string]map[string]string{}}
			byItem[a.ItemID] = ia
			order = append(order, a.ItemID)
		}
		if a.Variant == store.ProbeOriginal {
			for len(ia.asks) <= a.Ask {
				ia.asks = append(ia.asks, nil)
			}
			ia.asks[a.Ask] = a.Answers
		} else {
			ia.rewrites[a.Variant] = a.Answers
		}
	}
	replies := map[int64]int{}
	for _, id := range order {
		it, err := db.FindItem(ctx, p.ID, id)
		if err != nil {
			return nil, err
		}
		replies[id] = replyChars(it.Messages)
	}
	res := &Result{Run: runOf(run), Thresholds: t, Items: len(order), Summary: probe.Summary{
		Retest: []probe.RetestResult{}, Perturbation: []probe.PerturbResult{}, Length: []probe.LengthResult{}}}
	for i := range def.Items {
		it := &def.Items[i]
		scale := allowedStrings(def.Allowed(it))
		read := func(m map[string]string) string {
			if v := m[it.Key]; slices.Contains(scale, v) {
				return v
			}
			return "" // no answer, or ERROR: not a readable answer
		}
		var retest []probe.Answers
		pairs := map[probe.Rewrite][]probe.Pair{}
		var length []failmap.Item
		for _, id := range order {
			ia := byItem[id]
			a := probe.Answers{Item: itemKey(id)}
			for _, m := range ia.asks {
				a.Answers = append(a.Answers, read(m))
			}
			retest = append(retest, a)
			first := ""
			if len(ia.asks) > 0 {
				first = read(ia.asks[0])
			}
			for _, rw := range probe.Rewrites {
				if m, ok := ia.rewrites[string(rw)]; ok {
					pairs[rw] = append(pairs[rw], probe.Pair{Item: itemKey(id), Original: first, Rewritten: read(m)})
				}
			}
			if first != "" {
				length = append(length, failmap.Item{ReplyChars: replies[id], People: people[id][it.Key], Judge: first})
			}
		}
		rt, err := probe.Retest(it.Key, scale, retest, t)
		if err != nil {
			return nil, err
		}
		res.Summary.Retest = append(res.Summary.Retest, rt)
		for _, rw := range probe.Rewrites {
			pr, err := probe.Perturbation(it.Key, rw, pairs[rw], t)
			if err != nil {
				return nil, err
			}
			res.Summary.Perturbation = append(res.Summary.Perturbation, pr)
		}
		lr, err := probe.LengthProbe(it.Key, length, t)
		if err != nil {
			return nil, err
		}
		res.Summary.Length = append(res.Summary.Length, lr)
	}
	res.Unstable, res.Failed = res.Summary.Unstable(), res.Summary.Failed()
	if res.Failed == nil {
		res.Failed = []string{}
	}
	return res, nil
}

// Latest reads the latest completed probe of each judge and prompt
// version on p, by the rater that stands for them (attune.JudgeRun.RaterID),
// as the report's alt-test is by rater.
func Latest(ctx context.Context, db Store, p *attune.Project) (map[int64]*Result, error) {
	runs, err := db.LatestProbes(ctx, p.ID)
	if err != nil {
		return nil, err
	}
	out := make(map[int64]*Result, len(runs))
	for _, run := range runs {
		r, err := Read(ctx, db, p, run)
		if err != nil {
			return nil, err
		}
		out[run.RaterID] = r
	}
	return out, nil
}

func runOf(r *attune.JudgeRun) Run {
	return Run{ID: r.ID, JudgeID: r.JudgeID, Judge: r.JudgeName, RaterID: r.RaterID, PromptVersion: max(r.PromptVersion, 1), K: r.ProbeK,
		Status: r.Status, Reason: r.Reason, SpentUSD: r.SpentUSD, CreatedAt: r.CreatedAt, FinishedAt: r.FinishedAt}
}

// replyChars is the length of the dialogue's last assistant reply, -1
// when it has none.
func replyChars(msgs []attune.Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == probe.RoleAssistant {
			return len([]rune(msgs[i].Content))
		}
	}
	return -1
}

func allowedStrings(vs []rubric.Value) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = string(v)
	}
	return out
}

func itemKey(id int64) string { return "item " + itoa(id) }

func itoa(id int64) string { return strconv.FormatInt(id, 10) }
