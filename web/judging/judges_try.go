package judging

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/web/kit"
	judgeview "github.com/attune/attune/web/views/judge"
	"github.com/attune/attune/web/views/layout"
)

// tryTimeout bounds a try, below the server's write timeout, so that the
// page always comes back: items not asked by then say so.
const tryTimeout = 90 * time.Second

// TryJudge asks a judge about one item of a project the viewer leads and
// shows what came back. Nothing is stored.
func (s *Handler) TryJudge(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	j, err := s.findJudge(r)
	if err != nil {
		return err
	}
	project, source := strings.TrimSpace(r.PostFormValue("project")), strings.TrimSpace(r.PostFormValue("item"))
	try, err := s.tryForm(ctx, j.ID, project, source)
	if err != nil {
		return err
	}
	p, itemID, err := s.tryTarget(ctx, kit.UserFrom(ctx), project, source)
	var bad *attune.ValidationError
	if errors.As(err, &bad) {
		try.Errors = bad.Fields
		s.renderJudgeForm(w, r, http.StatusUnprocessableEntity, j, judgeForm(j), nil, try)
		return nil
	}
	if err != nil {
		return err
	}
	item, err := s.DB.FindItem(ctx, p.ID, itemID)
	if err != nil {
		return err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}

	tctx, cancel := context.WithTimeout(ctx, tryTimeout)
	defer cancel()
	trial, err := s.runner.Try(tctx, j, p, itemID)
	if err != nil {
		return err
	}

	page := judgeview.TryPage{
		Chrome:    s.Chrome(r, "Try "+j.Name, "judges"),
		JudgeName: j.Name, Model: j.Model, EditURL: templ.SafeURL(judgePath(j.ID)),
		ProjectName: p.Name, SourceID: item.SourceID, Failure: trial.Failure,
		Capabilities: capsView(trial.Capabilities), Try: try,
	}
	var total judge.Usage
	var cost float64
	for _, res := range trial.Results {
		method, reasked := methodOf(res.Method)
		v := judgeview.TryResult{
			Key: res.Key, Label: itemLabel(def, res.Key), PromptHash: res.Prompt.Hash,
			Raw: res.Raw, ReaskRaw: res.ReaskRaw, Value: string(res.Value), Method: method, Reasked: reasked,
			Reasoning: res.Reasoning, Note: res.Note, Error: res.Error,
			Tokens:  kit.Tokens(int64(res.Usage.InputTokens), int64(res.Usage.CachedInputTokens), int64(res.Usage.OutputTokens)),
			Cost:    usd(res.CostUSD),
			Latency: fmt.Sprintf("%d ms", res.Latency.Milliseconds()),
		}
		var msgs []string
		for _, m := range res.Prompt.Messages {
			msgs = append(msgs, m.Content)
		}
		v.Prompt = strings.Join(msgs, "\n\n")
		if res.WeightedScore != nil {
			v.Weighted = fmt.Sprintf("%.2f", *res.WeightedScore)
			d := map[string]float64{}
			for k, p := range res.Distribution {
				d[string(k)] = p
			}
			v.Distribution = shares(def, d)
		}
		total = total.Add(res.Usage)
		cost += res.CostUSD
		page.Results = append(page.Results, v)
	}
	page.Tokens = kit.Tokens(int64(total.InputTokens), int64(total.CachedInputTokens), int64(total.OutputTokens))
	page.Cost = usd(cost)
	if errors.Is(tctx.Err(), context.DeadlineExceeded) && page.Failure == "" {
		page.Flash = layout.Flash{Kind: "error", Message: "The try took longer than 90 seconds; the items not answered by then say so."}
	}
	s.Render(w, r, http.StatusOK, judgeview.Try(page))
	return nil
}

// tryTarget finds what a judge is tried on: project (its id, as typed) must
// be one u leads — the same rule as its other management pages, so that a
// try cannot reach other projects' items — and source the id of one of its
// items, or empty for its first item. A choice that will not do is a
// *attune.ValidationError naming the field.
func (s *Handler) tryTarget(ctx context.Context, u *attune.User, project, source string) (*attune.Project, int64, error) {
	pid, err := strconv.ParseInt(project, 10, 64)
	if err != nil || pid <= 0 {
		return nil, 0, attune.Invalid("project", "Choose a project you lead.")
	}
	role, err := s.DB.ProjectRole(ctx, pid, u)
	if kit.IsNotFound(err) || err == nil && role != attune.MemberLead {
		return nil, 0, attune.Invalid("project", "Choose a project you lead.")
	}
	if err != nil {
		return nil, 0, err
	}
	p, err := s.DB.FindProjectByID(ctx, pid)
	if err != nil {
		return nil, 0, err
	}
	if source == "" {
		ids, err := s.DB.ItemIDs(ctx, p.ID, 1)
		if err != nil {
			return nil, 0, err
		}
		if len(ids) == 0 {
			return nil, 0, attune.Invalid("item", "This project has no items yet.")
		}
		return p, ids[0], nil
	}
	itemID, err := s.DB.ItemIDBySource(ctx, p.ID, source)
	if kit.IsNotFound(err) {
		return nil, 0, attune.Invalid("item", fmt.Sprintf("%s has no item with the id %q.", p.Name, source))
	}
	return p, itemID, err
}
