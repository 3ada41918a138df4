package review

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/web/kit"
)

// apiBrowserProject loads the project of a lead-only item route of the
// API: an annotator of the project gets 403, anyone else 404.
func (s *Handler) apiBrowserProject(r *http.Request, u *attune.User) (*attune.Project, *rubric.Definition, error) {
	p, err := s.APILeadProject(r, u, "search its items")
	if err != nil {
		return nil, nil, err
	}
	def, err := s.DB.FindRubricByID(r.Context(), p.RubricVersionID)
	return p, def, err
}

type apiItemRow struct {
	ID       int64           `json:"id"`
	SourceID string          `json:"source_id"`
	Kind     string          `json:"kind"`
	Turns    int             `json:"turns"`
	Opening  string          `json:"opening"`
	Meta     json.RawMessage `json:"meta"`
	// System is the item's meta under the project's system key, as text;
	// null when it names none.
	System    *string   `json:"system"`
	People    int       `json:"people"`
	Judges    int       `json:"judges"`
	Gold      *string   `json:"gold"`
	Flags     int       `json:"flags"`
	InPool    bool      `json:"in_pool"`
	CreatedAt time.Time `json:"created_at"`
}

type apiItemPage struct {
	Items      []apiItemRow `json:"items"`
	NextCursor *string      `json:"next_cursor"`
}

// APIItems searches the project's items as the items browser does, with
// the same query parameters (readItemSearch), and ?limit= (1 to 100,
// default 50); next_cursor, passed as ?cursor= with the same search,
// gives the next page.
func (s *Handler) APIItems(r *http.Request, u *attune.User) (int, any, error) {
	p, def, err := s.apiBrowserProject(r, u)
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	search, err := readItemSearch(q, def)
	if err != nil {
		return 0, nil, err
	}
	if search.Limit, err = kit.PageLimit(q.Get("limit")); err != nil {
		return 0, nil, err
	}
	db, _ := s.HeavyReads(r)
	res, err := db.SearchItems(r.Context(), p.ID, search)
	if err != nil {
		return 0, nil, err
	}
	out := apiItemPage{Items: make([]apiItemRow, 0, len(res.Items))}
	for _, it := range res.Items {
		row := apiItemRow{ID: it.ID, SourceID: it.SourceID, Kind: it.Kind, Turns: it.Turns, Opening: it.Opening, Meta: it.Meta,
			People: it.People, Judges: it.Judges, Flags: it.Flags, InPool: !it.Pulled, CreatedAt: it.Created.UTC()}
		if it.Gold != "" {
			g := it.Gold
			row.Gold = &g
		}
		// Whole: no value is longer than the meta that holds it.
		if sys, ok := itemSystem(it.Meta, p.SystemKey, len(it.Meta)); ok {
			row.System = &sys
		}
		out.Items = append(out.Items, row)
	}
	if res.Next != "" {
		out.NextCursor = &res.Next
	}
	return http.StatusOK, out, nil
}

type apiAnswerSet struct {
	RaterID     int64             `json:"rater_id"`
	Kind        string            `json:"kind"`
	Name        string            `json:"name"`
	Email       string            `json:"email,omitempty"`
	Model       string            `json:"model,omitempty"`
	Answers     map[string]string `json:"answers"`
	Rationales  map[string]string `json:"rationales"`
	Methods     map[string]string `json:"methods,omitempty"`
	Rationale   string            `json:"rationale"`
	SubmittedAt time.Time         `json:"submitted_at"`
	// Score is the scoring engine's result on these answers.
	Score         scoring.Result `json:"score"`
	SafetyConcern bool           `json:"safety_concern"`
}

type apiItemGold struct {
	Answers   map[string]string `json:"answers"`
	Method    string            `json:"method"`
	DecidedBy string            `json:"decided_by"`
	Note      string            `json:"note"`
	DecidedAt time.Time         `json:"decided_at"`
	Score     scoring.Result    `json:"score"`
}

type apiAdjudication struct {
	DecidedBy string            `json:"decided_by"`
	DecidedAt time.Time         `json:"decided_at"`
	Answers   map[string]string `json:"answers"`
	Accepted  []string          `json:"accepted_consensus"`
	Note      string            `json:"note"`
}

type apiItemEvent struct {
	At     time.Time `json:"at"`
	Who    string    `json:"who"`
	What   string    `json:"what"`
	Detail string    `json:"detail"`
}

type apiItemDetail struct {
	ID            int64             `json:"id"`
	SourceID      string            `json:"source_id"`
	Kind          string            `json:"kind"`
	Turns         int               `json:"turns"`
	Messages      []attune.Message  `json:"messages"`
	Meta          json.RawMessage   `json:"meta"`
	System        *string           `json:"system"` // as in apiItemRow
	Sensitive     bool              `json:"sensitive"`
	AnswerSets    []apiAnswerSet    `json:"answer_sets"`
	Gold          *apiItemGold      `json:"gold"`
	Adjudications []apiAdjudication `json:"adjudications"`
	Flags         []apiFlag         `json:"flags"`
	History       []apiItemEvent    `json:"history"`
}

// APIItem returns one item of the project with everything its page in
// the items browser shows.
func (s *Handler) APIItem(r *http.Request, u *attune.User) (int, any, error) {
	p, def, err := s.apiBrowserProject(r, u)
	if err != nil {
		return 0, nil, err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return 0, nil, err
	}
	d, err := s.loadItemDetail(r.Context(), p, def, itemID)
	if err != nil {
		return 0, nil, err
	}
	it := d.item
	out := apiItemDetail{ID: it.ID, SourceID: it.SourceID, Kind: it.Kind, Turns: it.Turns, Messages: it.Messages, Meta: it.Meta,
		Sensitive: it.Sensitive, AnswerSets: []apiAnswerSet{}, Adjudications: []apiAdjudication{}, Flags: []apiFlag{}, History: []apiItemEvent{}}
	if sys, ok := itemSystem(it.Meta, p.SystemKey, len(it.Meta)); ok {
		out.System = &sys
	}
	for i, a := range d.sets {
		out.AnswerSets = append(out.AnswerSets, apiAnswerSet{RaterID: a.RaterID, Kind: a.Kind, Name: a.Name, Email: a.Email, Model: a.Model,
			Answers: a.Answers, Rationales: a.Rationales, Methods: a.Methods, Rationale: a.Rationale, SubmittedAt: a.Submitted.UTC(),
			Score: d.scores[i], SafetyConcern: gold.SafetyConcern(def, kit.ToAnswers(a.Answers))})
	}
	if g := d.gold; g != nil {
		out.Gold = &apiItemGold{Answers: g.Answers, Method: g.Method, DecidedBy: g.DecidedBy, Note: g.Note, DecidedAt: g.DecidedAt.UTC(), Score: d.goldScore}
	}
	for _, a := range d.adjudications {
		acc := a.Accepted
		if acc == nil {
			acc = []string{}
		}
		out.Adjudications = append(out.Adjudications, apiAdjudication{a.DecidedBy, a.DecidedAt.UTC(), a.Answers, acc, a.Note})
	}
	for _, f := range d.flags {
		out.Flags = append(out.Flags, apiFlagOf(f))
	}
	for _, e := range d.history {
		out.History = append(out.History, apiItemEvent{e.At.UTC(), e.Who, e.What, e.Detail})
	}
	return http.StatusOK, out, nil
}
