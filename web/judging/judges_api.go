package judging

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/judge"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/runs"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/internal/textdiff"
	"github.com/attune/attune/web/kit"
)

// The JSON API of judges, their prompt versions and runs (docs/api.md);
// the judge experiment's is served with the reports. Each handler reads
// its input, then calls what the page that does the same thing calls:
// parseJudge and the store for judges, tryTarget and the runner for a
// try, the runs flow (runs.Flow) for runs, the run actions of the run's
// page.

// formText is a number field of an API body kept as the text the form
// would carry: a JSON number as written, a string as it is, null as
// empty. The form's rules then read it, with the form's message for the
// field when it is no number.
type formText string

func (f *formText) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*f = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = formText(s)
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		*f = formText(b)
	default:
		return errors.New("a number field holds neither a number nor text")
	}
	return nil
}

// apiJudgeFields are a judge's settings as the API writes and reads them,
// named as the judge form's fields so that a refusal names the field
// sent. Numbers are kept as sent and read by the form's rules; absent or
// null is an empty field (its default).
type apiJudgeFields struct {
	Name        string   `json:"name"`
	Provider    string   `json:"provider"`
	BaseURL     string   `json:"base_url"`
	Model       string   `json:"model"`
	KeyEnv      string   `json:"key_env"`
	Temperature formText `json:"temperature"`
	MaxTokens   formText `json:"max_tokens"`
	Samples     formText `json:"samples"`
	Logprobs    bool     `json:"logprobs"`
	Seed        formText `json:"seed"`
	Concurrency formText `json:"concurrency"`
	RPM         formText `json:"rpm"`
	TPM         formText `json:"tpm"`
	PriceInput  formText `json:"price_input"`
	PriceCached formText `json:"price_cached"`
	PriceOutput formText `json:"price_output"`
}

func (b apiJudgeFields) input() attune.JudgeInput {
	return attune.JudgeInput{
		Name: b.Name, Provider: b.Provider, BaseURL: b.BaseURL, Model: b.Model, KeyEnv: b.KeyEnv,
		Temperature: string(b.Temperature), MaxTokens: string(b.MaxTokens), Samples: string(b.Samples), Seed: string(b.Seed),
		Logprobs: b.Logprobs, Concurrency: string(b.Concurrency), RPM: string(b.RPM), TPM: string(b.TPM),
		PriceInput: string(b.PriceInput), PriceCached: string(b.PriceCached), PriceOut: string(b.PriceOutput),
	}
}

// apiJudgeUpdate is the body of a judge's edit: every field, as on
// creation, and confirm_key, which sends the judge's key to a new
// endpoint (the form's confirmation box).
type apiJudgeUpdate struct {
	apiJudgeFields
	ConfirmKey bool `json:"confirm_key"`
}

type apiJudge struct {
	ID          int64    `json:"id"`
	Name        string   `json:"name"`
	Provider    string   `json:"provider"`
	BaseURL     string   `json:"base_url"`
	Model       string   `json:"model"`
	KeyEnv      string   `json:"key_env"`
	Temperature *float64 `json:"temperature"`
	MaxTokens   *int     `json:"max_tokens"`
	Samples     int      `json:"samples"`
	Logprobs    bool     `json:"logprobs"`
	Seed        *int64   `json:"seed"`
	Concurrency int      `json:"concurrency"`
	RPM         *int     `json:"rpm"`
	TPM         *int     `json:"tpm"`
	PriceInput  float64  `json:"price_input"`
	PriceCached float64  `json:"price_cached"`
	PriceOutput float64  `json:"price_output"`
	// Owner is the owner's email ("" when there is none), who with admins
	// may change the connection and the prompts.
	Owner               string          `json:"owner"`
	MayChangeConnection bool            `json:"may_change_connection"`
	CreatedAt           time.Time       `json:"created_at"`
	Totals              *apiJudgeTotals `json:"totals"`
}

type apiJudgeTotals struct {
	Runs         int     `json:"runs"`
	Calls        int     `json:"calls"`
	InputTokens  int64   `json:"input_tokens"`
	CachedTokens int64   `json:"cached_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

func judgeJSON(j *attune.Judge, u *attune.User, totals map[int64]store.JudgeTotals) apiJudge {
	st := j.Settings.WithDefaults()
	out := apiJudge{
		ID: j.ID, Name: j.Name, Provider: j.Provider, BaseURL: j.BaseURL, Model: j.Model, KeyEnv: j.APIKeyEnv,
		Temperature: st.Temperature, MaxTokens: kit.Positive(st.MaxTokens), Samples: st.SampleCount(), Logprobs: st.Logprobs, Seed: st.Seed,
		Concurrency: st.Concurrency, RPM: kit.Positive(st.RPM), TPM: kit.Positive(st.TPM),
		PriceInput: st.Prices.InputPerMTok, PriceCached: st.Prices.CachedInputPerMTok, PriceOutput: st.Prices.OutputPerMTok,
		Owner: j.OwnerEmail, MayChangeConnection: j.MayChangeConnection(u), CreatedAt: j.CreatedAt.UTC(),
	}
	if t, ok := totals[j.ID]; ok {
		out.Totals = &apiJudgeTotals{Runs: t.Runs, Calls: t.Calls, InputTokens: t.InputTokens, CachedTokens: t.CachedTokens,
			OutputTokens: t.OutputTokens, CostUSD: t.CostUSD}
	}
	return out
}

// APIJudges lists every judge, as the judges page does, with what each
// has cost so far.
func (s *Handler) APIJudges(r *http.Request, u *attune.User) (int, any, error) {
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	judges, next, err := s.DB.JudgePage(r.Context(), page.Cursor, page.Limit)
	if err != nil {
		return 0, nil, err
	}
	totals, err := s.DB.TotalsByJudge(r.Context())
	if err != nil {
		return 0, nil, err
	}
	return kit.ListPage("judges", judges, next, func(j *attune.Judge) apiJudge { return judgeJSON(j, u, totals) })
}

// apiJudgeByPath loads the judge named in the path.
func (s *Handler) apiJudgeByPath(r *http.Request) (*attune.Judge, error) {
	id, err := kit.PathInt(r, "id")
	if err != nil {
		return nil, attune.NotFound("judge not found")
	}
	return s.DB.FindJudge(r.Context(), id)
}

// APIJudge returns one judge with what its runs have cost so far.
func (s *Handler) APIJudge(r *http.Request, u *attune.User) (int, any, error) {
	j, err := s.apiJudgeByPath(r)
	if err != nil {
		return 0, nil, err
	}
	totals, err := s.DB.TotalsByJudge(r.Context())
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, judgeJSON(j, u, totals), nil
}

// APICreateJudge creates a judge owned by the token's user. The judge names
// the environment variable its key is read from; a key sent in any field
// is refused without being repeated, as on the form.
func (s *Handler) APICreateJudge(r *http.Request, u *attune.User) (int, any, error) {
	var body apiJudgeFields
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	nj, errs := s.parseJudge(body.input())
	if len(errs) > 0 {
		return 0, nil, &attune.ValidationError{Fields: errs}
	}
	j, err := s.DB.CreateJudge(r.Context(), &u.ID, s.policy, nj)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, judgeJSON(j, u, nil), nil
}

// APIUpdateJudge replaces a judge's settings, by the edit form's rules:
// only its owner or an admin changes its connection, and a key is sent to
// a new endpoint only with confirm_key.
func (s *Handler) APIUpdateJudge(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	j, err := s.apiJudgeByPath(r)
	if err != nil {
		return 0, nil, err
	}
	var body apiJudgeUpdate
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	nj, errs := s.parseJudge(body.input())
	if err := connectionRefusal(u, j, nj, errs); err != nil {
		return 0, nil, err
	}
	if len(errs) > 0 {
		return 0, nil, &attune.ValidationError{Fields: errs}
	}
	nj.KeyConfirmed = body.ConfirmKey && nj.APIKeyEnv != ""
	if err := s.DB.UpdateJudge(ctx, &u.ID, s.policy, j.ID, nj); err != nil {
		return 0, nil, err
	}
	if j, err = s.DB.FindJudge(ctx, j.ID); err != nil {
		return 0, nil, err
	}
	totals, err := s.DB.TotalsByJudge(ctx)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, judgeJSON(j, u, totals), nil
}

type apiTrial struct {
	Judge        string             `json:"judge"`
	Model        string             `json:"model"`
	ProjectID    int64              `json:"project_id"`
	ItemID       int64              `json:"item_id"`
	SourceID     string             `json:"source_id"`
	Failure      string             `json:"failure"`
	Capabilities judge.Capabilities `json:"capabilities"`
	Results      []apiTrialResult   `json:"results"`
	Usage        apiUsage           `json:"usage"`
	CostUSD      float64            `json:"cost_usd"`
	TimedOut     bool               `json:"timed_out"`
}

type apiUsage struct {
	InputTokens  int `json:"input_tokens"`
	CachedTokens int `json:"cached_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type apiPromptMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type apiTrialResult struct {
	Key           string             `json:"key"`
	Prompt        []apiPromptMessage `json:"prompt"`
	PromptHash    string             `json:"prompt_hash"`
	Raw           string             `json:"raw"`
	ReaskRaw      string             `json:"reask_raw"`
	Value         string             `json:"value"`
	Method        string             `json:"method"`
	Reasoning     string             `json:"reasoning"`
	Note          string             `json:"note"`
	WeightedScore *float64           `json:"weighted_score"`
	Distribution  map[string]float64 `json:"distribution"`
	Usage         apiUsage           `json:"usage"`
	CostUSD       float64            `json:"cost_usd"`
	LatencyMS     int64              `json:"latency_ms"`
	Error         string             `json:"error"`
}

// APITryJudge asks the judge about one item of a project the token's user
// leads ({"project": id, "item": "source id"}, the first item when no
// item is named) and returns what came back. Nothing is stored.
func (s *Handler) APITryJudge(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	j, err := s.apiJudgeByPath(r)
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Project formText `json:"project"`
		Item    string   `json:"item"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	p, itemID, err := s.tryTarget(ctx, u, string(body.Project), strings.TrimSpace(body.Item))
	if err != nil {
		return 0, nil, err
	}
	item, err := s.DB.FindItem(ctx, p.ID, itemID)
	if err != nil {
		return 0, nil, err
	}
	tctx, cancel := context.WithTimeout(ctx, tryTimeout)
	defer cancel()
	trial, err := s.runner.Try(tctx, j, p, itemID)
	if err != nil {
		return 0, nil, err
	}
	out := apiTrial{Judge: j.Name, Model: j.Model, ProjectID: p.ID, ItemID: item.ID, SourceID: item.SourceID, Failure: trial.Failure,
		Capabilities: trial.Capabilities, Results: []apiTrialResult{}, TimedOut: errors.Is(tctx.Err(), context.DeadlineExceeded)}
	if out.Capabilities.Notes == nil {
		out.Capabilities.Notes = []string{}
	}
	for _, res := range trial.Results {
		v := apiTrialResult{Key: res.Key, PromptHash: res.Prompt.Hash, Raw: res.Raw, ReaskRaw: res.ReaskRaw, Value: string(res.Value),
			Method: res.Method, Reasoning: res.Reasoning, Note: res.Note, WeightedScore: res.WeightedScore,
			Usage:   apiUsage{res.Usage.InputTokens, res.Usage.CachedInputTokens, res.Usage.OutputTokens},
			CostUSD: res.CostUSD, LatencyMS: res.Latency.Milliseconds(), Error: res.Error, Prompt: []apiPromptMessage{}}
		for _, m := range res.Prompt.Messages {
			v.Prompt = append(v.Prompt, apiPromptMessage{Role: m.Role, Content: m.Content})
		}
		if res.Distribution != nil {
			v.Distribution = map[string]float64{}
			for k, p := range res.Distribution {
				v.Distribution[string(k)] = p
			}
		}
		out.Usage.InputTokens += res.Usage.InputTokens
		out.Usage.CachedTokens += res.Usage.CachedInputTokens
		out.Usage.OutputTokens += res.Usage.OutputTokens
		out.CostUSD += res.CostUSD
		out.Results = append(out.Results, v)
	}
	return http.StatusOK, out, nil
}

// apiRunLeadProject loads the project of a run or prompt route for one of
// its leads; an annotator of it gets 403, anyone else 404.
func (s *Handler) apiRunLeadProject(r *http.Request, u *attune.User) (*attune.Project, error) {
	p, role, err := s.APIProjectAccess(r.Context(), r, u)
	if err != nil {
		return nil, err
	}
	if role != attune.MemberLead {
		return nil, attune.Forbidden("only the project's leads run its judges")
	}
	return p, nil
}

type apiPromptVersion struct {
	Version       int       `json:"version"`
	ParentVersion *int      `json:"parent_version"`
	Author        string    `json:"author"`
	CreatedAt     time.Time `json:"created_at"`
	Runs          int       `json:"runs"`
	// Prompts and Changed are set on one version: its templates by
	// rubric item key, and the keys whose template differs from the
	// parent's.
	Prompts map[string]string `json:"prompts,omitempty"`
	Changed []string          `json:"changed,omitempty"`
}

func promptVersionJSON(v *attune.JudgePrompt) apiPromptVersion {
	out := apiPromptVersion{Version: v.Version, Author: v.AuthorEmail, CreatedAt: v.CreatedAt.UTC(), Runs: v.Runs}
	if v.ParentVersion > 0 {
		n := v.ParentVersion
		out.ParentVersion = &n
	}
	return out
}

// apiPromptsOf loads the project, its rubric and the judge of a prompt
// route.
func (s *Handler) apiPromptsOf(r *http.Request, u *attune.User) (*attune.Project, *rubric.Definition, *attune.Judge, error) {
	p, err := s.apiRunLeadProject(r, u)
	if err != nil {
		return nil, nil, nil, err
	}
	def, j, err := s.promptJudge(r, p)
	return p, def, j, err
}

// APIPrompts lists the judge's prompt versions for the project's rubric.
func (s *Handler) APIPrompts(r *http.Request, u *attune.User) (int, any, error) {
	p, _, j, err := s.apiPromptsOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	vs, next, err := s.DB.JudgePromptPage(r.Context(), j.ID, p.RubricVersionID, page.Cursor, page.Limit)
	if err != nil {
		return 0, nil, err
	}
	out := make([]apiPromptVersion, 0, len(vs))
	for _, v := range vs {
		out = append(out, promptVersionJSON(v))
	}
	return http.StatusOK, map[string]any{"versions": out, "may_edit": j.MayEditPrompts(u), "next_cursor": kit.NextCursor(next)}, nil
}

// APIPrompt returns one prompt version with its templates and the rubric
// items whose template changed from its parent's.
func (s *Handler) APIPrompt(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, def, j, err := s.apiPromptsOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	n, ok := promptVersionArg(r.PathValue("version"))
	if !ok {
		return 0, nil, attune.NotFound("prompt version not found")
	}
	v, err := s.DB.FindJudgePrompt(ctx, j.ID, p.RubricVersionID, n)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, s.promptVersionDetail(ctx, def, v), nil
}

func (s *Handler) promptVersionDetail(ctx context.Context, def *rubric.Definition, v *attune.JudgePrompt) any {
	out := promptVersionJSON(v)
	out.Prompts, out.Changed = v.Prompts, []string{}
	if v.ParentID != nil {
		parent, err := s.DB.FindJudgePromptByID(ctx, *v.ParentID)
		if err == nil {
			for _, it := range def.Items {
				if textdiff.Changed(textdiff.Lines(parent.Prompts[it.Key], v.Prompts[it.Key])) {
					out.Changed = append(out.Changed, it.Key)
				}
			}
		}
	}
	return out
}

// APICreatePrompt makes the judge's next prompt version from an edited
// copy of version from (1 when absent): {"from": 1, "prompts": {key:
// template}}, a template for every rubric item. Only the judge's owner or
// an admin may.
func (s *Handler) APICreatePrompt(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, def, j, err := s.apiPromptsOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	if err := mayEditPrompts(u, j); err != nil {
		return 0, nil, err
	}
	var body struct {
		From    int               `json:"from"`
		Prompts map[string]string `json:"prompts"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if body.From == 0 {
		body.From = 1
	}
	if body.From < 1 {
		return 0, nil, attune.Invalid("from", "give the version the new one is edited from, from 1 up")
	}
	v, err := s.DB.CreateJudgePrompt(ctx, &u.ID, store.NewJudgePrompt{JudgeID: j.ID, RubricVersionID: p.RubricVersionID,
		Parent: body.From, Prompts: body.Prompts})
	if errors.Is(err, attune.ErrNotFound) {
		return 0, nil, attune.Invalid("from", "the judge has no such prompt version for this project's rubric")
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, s.promptVersionDetail(ctx, def, v), nil
}

// apiRunBody is a run to estimate or start: the start form's fields.
type apiRunBody struct {
	Judge         formText `json:"judge"`
	Limit         formText `json:"limit"`
	BudgetUSD     formText `json:"budget_usd"`
	PromptVersion formText `json:"prompt_version"`
}

// apiRunInput reads and checks a run's body as the start form is checked.
func (s *Handler) apiRunInput(r *http.Request, p *attune.Project) (runs.Input, error) {
	var body apiRunBody
	if err := kit.DecodeJSON(r, &body); err != nil {
		return runs.Input{}, err
	}
	in, errs, err := s.runs.Check(r.Context(), p, runs.Fields{Judge: string(body.Judge), Limit: string(body.Limit),
		Budget: string(body.BudgetUSD), Prompt: string(body.PromptVersion)})
	if err == nil && len(errs) > 0 {
		err = &attune.ValidationError{Fields: errs}
	}
	return in, err
}

type apiEstimate struct {
	Judge         string   `json:"judge"`
	Model         string   `json:"model"`
	PromptVersion int      `json:"prompt_version"`
	Items         int      `json:"items"`
	Sentinels     int      `json:"calibration_items"` // asked by every run too
	RubricItems   int      `json:"rubric_items"`
	Samples       int      `json:"samples"`
	Calls         int      `json:"calls"`
	InputTokens   int      `json:"input_tokens"`
	OutputTokens  int      `json:"output_tokens"`
	USD           float64  `json:"usd"`
	BudgetUSD     *float64 `json:"budget_usd"`
	OverBudget    bool     `json:"over_budget"`
	// Active says which run of the judge is still queued or running on
	// the project, which a start would be refused for ("" when none).
	Active string `json:"active_run"`
}

// APIEstimateRun says what a run would cost, as the confirmation page
// does. Nothing is stored.
func (s *Handler) APIEstimateRun(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, err := s.apiRunLeadProject(r, u)
	if err != nil {
		return 0, nil, err
	}
	in, err := s.apiRunInput(r, p)
	if err != nil {
		return 0, nil, err
	}
	est, err := s.runs.Estimate(ctx, p, in)
	if err != nil {
		return 0, nil, err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return 0, nil, err
	}
	act, err := s.runs.Active(ctx, p, in.Judge.ID, in.Prompt)
	if err != nil {
		return 0, nil, err
	}
	out := apiEstimate{Judge: in.Judge.Name, Model: in.Judge.Model, PromptVersion: max(in.Prompt, 1), Items: est.Items, Sentinels: est.Sentinels, RubricItems: len(def.Items),
		Samples: in.Judge.Settings.SampleCount(), Calls: est.Calls, InputTokens: est.InputTokens, OutputTokens: est.OutputTokens,
		USD: est.USD, BudgetUSD: in.Budget, Active: act}
	if in.Budget != nil {
		out.OverBudget = est.USD > *in.Budget
	}
	return http.StatusOK, out, nil
}

type apiRun struct {
	ID            int64      `json:"id"`
	JudgeID       int64      `json:"judge_id"`
	Judge         string     `json:"judge"`
	PromptVersion int        `json:"prompt_version"`
	Status        string     `json:"status"`
	Reason        string     `json:"reason"`
	ItemLimit     *int       `json:"item_limit"`
	BudgetUSD     *float64   `json:"budget_usd"`
	EstimateUSD   float64    `json:"estimate_usd"`
	SpentUSD      float64    `json:"spent_usd"`
	ItemsTotal    int        `json:"items_total"`
	CreatedAt     time.Time  `json:"created_at"`
	StartedAt     *time.Time `json:"started_at"`
	FinishedAt    *time.Time `json:"finished_at"`
}

// apiRunStatus is one run with what its page shows of it.
type apiRunStatus struct {
	apiRun
	Progress     apiRunProgress      `json:"progress"`
	ByRubricItem []apiRubricItemCost `json:"by_rubric_item"`
	// Actions are what a lead may do to the run now.
	Actions apiRunActions `json:"actions"`
}

type apiRunProgress struct {
	ItemsTotal      int      `json:"items_total"`
	ItemsDone       int      `json:"items_done"`
	Labels          int      `json:"labels"`
	Errors          int      `json:"errors"`
	Calls           int      `json:"calls"`
	InputTokens     int64    `json:"input_tokens"`
	CachedTokens    int64    `json:"cached_tokens"`
	OutputTokens    int64    `json:"output_tokens"`
	CostUSD         float64  `json:"cost_usd"`
	SecondsLeft     *int64   `json:"seconds_left"`
	BudgetRemaining *float64 `json:"budget_remaining_usd"`
}

type apiRubricItemCost struct {
	Key          string  `json:"key"`
	Calls        int     `json:"calls"`
	Failed       int     `json:"failed"`
	Reasks       int     `json:"reasks"`
	Errors       int     `json:"errors"`
	InputTokens  int64   `json:"input_tokens"`
	CachedTokens int64   `json:"cached_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

type apiRunActions struct {
	Pause  bool `json:"pause"`
	Resume bool `json:"resume"`
	Cancel bool `json:"cancel"`
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func runJSON(run *attune.JudgeRun) apiRun {
	return apiRun{ID: run.ID, JudgeID: run.JudgeID, Judge: run.JudgeName, PromptVersion: max(run.PromptVersion, 1), Status: string(run.Status),
		Reason: run.Reason, ItemLimit: run.ItemLimit, BudgetUSD: run.BudgetUSD, EstimateUSD: run.EstimateUSD, SpentUSD: run.SpentUSD,
		ItemsTotal: run.ItemsTotal, CreatedAt: run.CreatedAt.UTC(), StartedAt: utcPtr(run.StartedAt), FinishedAt: utcPtr(run.FinishedAt)}
}

// runStatusJSON is a run with its progress, its calls per rubric item in
// the rubric's order, and what may be done to it — what its page shows
// (progressView).
func (s *Handler) runStatusJSON(ctx context.Context, p *attune.Project, run *attune.JudgeRun) (apiRunStatus, error) {
	out := apiRunStatus{apiRun: runJSON(run)}
	pr, err := s.DB.RunProgress(ctx, run)
	if err != nil {
		return out, err
	}
	byItem, err := s.DB.RunTotalsByRubricItem(ctx, run.ID)
	if err != nil {
		return out, err
	}
	def, err := s.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return out, err
	}
	out.Progress = apiRunProgress{ItemsTotal: pr.ItemsTotal, ItemsDone: pr.ItemsDone, Labels: pr.Labels, Errors: pr.Errors, Calls: pr.Calls,
		InputTokens: pr.InputTokens, CachedTokens: pr.CachedTokens, OutputTokens: pr.OutputTokens, CostUSD: pr.CostUSD}
	if pr.TimeLeft > 0 {
		secs := int64(pr.TimeLeft.Seconds())
		out.Progress.SecondsLeft = &secs
	}
	if run.BudgetUSD != nil {
		left := max(*run.BudgetUSD-run.SpentUSD, 0)
		out.Progress.BudgetRemaining = &left
	}
	out.Actions = apiRunActions{Pause: runs.IsActive(run.Status), Cancel: runs.IsActive(run.Status) || run.Status == attune.RunPaused,
		Resume: run.Status == attune.RunPaused && !runs.BudgetSpent(run)}
	order := map[string]int{}
	for i, it := range def.Items {
		order[it.Key] = i
	}
	out.ByRubricItem = []apiRubricItemCost{}
	for _, t := range byItem {
		out.ByRubricItem = append(out.ByRubricItem, apiRubricItemCost{Key: t.Key, Calls: t.Calls, Failed: t.Failed, Reasks: t.Reasks,
			Errors: t.Errors, InputTokens: t.InputTokens, CachedTokens: t.CachedTokens, OutputTokens: t.OutputTokens, CostUSD: t.CostUSD})
	}
	// The rubric's order, then keys the rubric no longer has, as on the
	// page.
	rank := func(k string) int {
		if i, ok := order[k]; ok {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(out.ByRubricItem, func(a, b apiRubricItemCost) int { return cmp.Compare(rank(a.Key), rank(b.Key)) })
	return out, nil
}

// APIStartRun starts a run, as the confirmation step does, with the
// budget it may spend: 201 with the queued run, 409 when a run of the
// judge is still queued or running on the project.
func (s *Handler) APIStartRun(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, err := s.apiRunLeadProject(r, u)
	if err != nil {
		return 0, nil, err
	}
	in, err := s.apiRunInput(r, p)
	if err != nil {
		return 0, nil, err
	}
	run, err := s.runs.Start(ctx, &u.ID, p, in)
	if err != nil {
		return 0, nil, err
	}
	if run, err = s.DB.FindRun(ctx, run.ID); err != nil {
		return 0, nil, err
	}
	out, err := s.runStatusJSON(ctx, p, run)
	return http.StatusCreated, out, err
}

// APIRuns lists the project's runs, newest first, as its page does.
func (s *Handler) APIRuns(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.apiRunLeadProject(r, u)
	if err != nil {
		return 0, nil, err
	}
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	runs, next, err := s.DB.RunPage(r.Context(), p.ID, page.Cursor, page.Limit)
	if err != nil {
		return 0, nil, err
	}
	return kit.ListPage("runs", runs, next, runJSON)
}

// apiRunOf loads the project and the run of a run route.
func (s *Handler) apiRunOf(r *http.Request, u *attune.User) (*attune.Project, *attune.JudgeRun, error) {
	p, err := s.apiRunLeadProject(r, u)
	if err != nil {
		return nil, nil, err
	}
	run, err := s.runOf(r, p)
	if errors.Is(err, attune.ErrNotFound) {
		err = attune.NotFound("run not found")
	}
	return p, run, err
}

// APIRun returns a run's status and progress: what its page shows and
// polls.
func (s *Handler) APIRun(r *http.Request, u *attune.User) (int, any, error) {
	p, run, err := s.apiRunOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	out, err := s.runStatusJSON(r.Context(), p, run)
	return http.StatusOK, out, err
}

// APIPauseRun pauses a run, as its page's button does.
func (s *Handler) APIPauseRun(r *http.Request, u *attune.User) (int, any, error) {
	return s.apiChangeRun(r, u, s.pauseRunAs)
}

// APIResumeRun resumes a paused run, as its page's button does.
func (s *Handler) APIResumeRun(r *http.Request, u *attune.User) (int, any, error) {
	return s.apiChangeRun(r, u, s.resumeRunAs)
}

// APICancelRun cancels a run, as its page's button does.
func (s *Handler) APICancelRun(r *http.Request, u *attune.User) (int, any, error) {
	return s.apiChangeRun(r, u, s.cancelRunAs)
}

// apiChangeRun applies one of a lead's actions on a run (those of the
// run's page) and returns the run as it is then, with what was done; 409
// when the run's state does not allow the action.
func (s *Handler) apiChangeRun(r *http.Request, u *attune.User, act runAction) (int, any, error) {
	ctx := r.Context()
	p, run, err := s.apiRunOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	msg, err := act(ctx, u, run)
	if err != nil {
		return 0, nil, err
	}
	if run, err = s.DB.FindRun(ctx, run.ID); err != nil {
		return 0, nil, err
	}
	out, err := s.runStatusJSON(ctx, p, run)
	return http.StatusOK, map[string]any{"message": msg, "run": out}, err
}

type apiRunItem struct {
	ItemID   int64             `json:"item_id"`
	SourceID string            `json:"source_id"`
	Answered bool              `json:"answered"`
	Answers  map[string]string `json:"answers"`
	Errors   int               `json:"errors"`
	Calls    int               `json:"calls"`
	CostUSD  float64           `json:"cost_usd"`
}

// APIRunItems lists the items of a run's scope with the judge's answers
// (?errors=true: the items with an ERROR answer), a page of ?limit= (1 to
// 100, default 50) at a time; next_cursor, passed as ?cursor= with the
// same filter, gives the next page.
func (s *Handler) APIRunItems(r *http.Request, u *attune.User) (int, any, error) {
	_, run, err := s.apiRunOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	errorsOnly := false
	switch v := q.Get("errors"); v {
	case "", "false":
	case "true":
		errorsOnly = true
	default:
		return 0, nil, attune.Invalid("errors", "use true or false")
	}
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	items, next, total, err := s.DB.RunItemPage(r.Context(), run, errorsOnly, page.Cursor, page.Limit)
	if err != nil {
		return 0, nil, err
	}
	out := make([]apiRunItem, 0, len(items))
	for _, it := range items {
		out = append(out, apiRunItem{ItemID: it.ItemID, SourceID: it.SourceID, Answered: it.Answered, Answers: it.Values,
			Errors: it.Errors, Calls: it.Calls, CostUSD: it.CostUSD})
	}
	return http.StatusOK, map[string]any{"items": out, "total": total, "next_cursor": kit.NextCursor(next)}, nil
}

type apiRunAnswer struct {
	Key           string             `json:"key"`
	Value         string             `json:"value"`
	Rationale     string             `json:"rationale"`
	Method        string             `json:"method"`
	PromptHash    string             `json:"prompt_hash"`
	WeightedScore *float64           `json:"weighted_score"`
	Distribution  map[string]float64 `json:"distribution"`
	Samples       []string           `json:"samples"`
	Spread        *float64           `json:"spread"`
	Raw           string             `json:"raw"`
	// RunID is the run that wrote the answer: an earlier run's answer is
	// reused, not asked again.
	RunID int64 `json:"run_id"`
}

type apiRunCall struct {
	ID         int64     `json:"id"`
	RunID      int64     `json:"run_id"`
	RubricItem string    `json:"rubric_item"`
	Sample     int       `json:"sample"`
	Reask      bool      `json:"reask"`
	OK         bool      `json:"ok"`
	Model      string    `json:"model"`
	PromptHash string    `json:"prompt_hash"`
	Raw        string    `json:"raw"`
	Error      string    `json:"error"`
	Usage      apiUsage  `json:"usage"`
	CostUSD    float64   `json:"cost_usd"`
	LatencyMS  int64     `json:"latency_ms"`
	At         time.Time `json:"at"`
}

type apiRunPerson struct {
	RaterID     int64             `json:"rater_id"`
	Name        string            `json:"name"`
	Answers     map[string]string `json:"answers"`
	SubmittedAt time.Time         `json:"submitted_at"`
	Score       *scoring.Result   `json:"score"`
}

// APIRunItem returns one item of a run as its page shows it: the dialogue,
// the judge's answers with how each was reached, the checks they fail,
// every call the judge made for the item, and the people's answers, each
// answer set with the engine's result.
func (s *Handler) APIRunItem(r *http.Request, u *attune.User) (int, any, error) {
	p, run, err := s.apiRunOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	x, err := s.readRunItem(r, p, run)
	if errors.Is(err, attune.ErrNotFound) {
		err = attune.NotFound("item not found")
	}
	if err != nil {
		return 0, nil, err
	}
	out := struct {
		ItemID     int64            `json:"item_id"`
		SourceID   string           `json:"source_id"`
		Messages   []attune.Message `json:"messages"`
		Answers    []apiRunAnswer   `json:"answers"`
		JudgeScore *scoring.Result  `json:"judge_score"`
		Notes      []kit.APIProblem `json:"notes"`
		Calls      []apiRunCall     `json:"calls"`
		People     []apiRunPerson   `json:"people"`
	}{ItemID: x.item.ID, SourceID: x.item.SourceID, Messages: x.item.Messages, Answers: []apiRunAnswer{}, JudgeScore: x.scores[0],
		Notes: []kit.APIProblem{}, Calls: []apiRunCall{}, People: []apiRunPerson{}}
	order := map[string]int{}
	for i, it := range x.def.Items {
		order[it.Key] = i
	}
	for _, a := range x.answers {
		out.Answers = append(out.Answers, apiRunAnswer{Key: a.Key, Value: a.Value, Rationale: a.Rationale, Method: a.Method, PromptHash: a.PromptHash,
			WeightedScore: a.WeightedScore, Distribution: a.Distribution, Samples: a.Samples, Spread: a.Spread, Raw: a.Raw, RunID: a.RunID})
	}
	slices.SortStableFunc(out.Answers, func(a, b apiRunAnswer) int { return cmp.Compare(order[a.Key], order[b.Key]) })
	for _, is := range x.notes {
		out.Notes = append(out.Notes, kit.APIProblem{Item: is.Item, Severity: string(is.Severity), Message: is.Message})
	}
	for _, c := range x.calls {
		out.Calls = append(out.Calls, apiRunCall{ID: c.ID, RunID: c.RunID, RubricItem: c.RubricItemKey, Sample: c.Sample, Reask: c.Reask, OK: c.OK,
			Model: c.Model, PromptHash: c.PromptHash, Raw: c.Raw, Error: c.Error, Usage: apiUsage{c.InputTokens, c.CachedTokens, c.OutputTokens},
			CostUSD: c.CostUSD, LatencyMS: c.Latency.Milliseconds(), At: c.At.UTC()})
	}
	for i, h := range x.people {
		out.People = append(out.People, apiRunPerson{RaterID: h.RaterID, Name: h.Name, Answers: h.Answers, SubmittedAt: h.Submitted.UTC(),
			Score: x.scores[i+1]})
	}
	return http.StatusOK, out, nil
}
