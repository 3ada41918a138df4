package review

import (
	"net/http"
	"time"

	"github.com/attune/attune/internal/adjudication"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/web/kit"
)

// apiGoldOf is the gold of an item as the API gives it, scored by the
// engine, read as the items browser's item page reads it.
func (s *Handler) apiGoldOf(r *http.Request, u *attune.User) (*apiItemGold, error) {
	p, def, err := s.apiBrowserProject(r, u)
	if err != nil {
		return nil, err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return nil, err
	}
	d, err := s.loadItemDetail(r.Context(), p, def, itemID)
	if err != nil {
		return nil, err
	}
	g := d.gold
	if g == nil {
		return nil, attune.NotFound("this item has no gold yet")
	}
	return &apiItemGold{Answers: g.Answers, Method: g.Method, DecidedBy: g.DecidedBy, Note: g.Note, DecidedAt: g.DecidedAt.UTC(), Score: d.goldScore}, nil
}

// APIGold returns an item's gold (leads), 404 while it has none.
func (s *Handler) APIGold(r *http.Request, u *attune.User) (int, any, error) {
	g, err := s.apiGoldOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, g, nil
}

// apiGoldInput is the body of a lead's gold for an item.
type apiGoldInput struct {
	Answers         map[string]string `json:"answers"`
	Note            string            `json:"note"`
	AcceptConsensus bool              `json:"accept_consensus"`
	ConfirmWarnings bool              `json:"confirm_warnings"`
}

// APISetGold adjudicates an item, as the adjudication page does
// (adjudication.Flow.Adjudicate): 200 with the gold as stored, 422 with the rubric's problems,
// or with confirm_warnings when only its warnings stand in the way.
func (s *Handler) APISetGold(r *http.Request, u *attune.User) (int, any, error) {
	// The project without its rubric: the flow reads that once itself.
	p, err := s.APILeadProject(r, u, "search its items")
	if err != nil {
		return 0, nil, err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return 0, nil, err
	}
	var body apiGoldInput
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	in := adjudication.Input{Answers: body.Answers, Note: body.Note, AcceptConsensus: body.AcceptConsensus, ConfirmWarnings: body.ConfirmWarnings}
	if _, err := s.adjudication.Adjudicate(r.Context(), p, u.ID, itemID, in); err != nil {
		return 0, nil, err
	}
	g, err := s.apiGoldOf(r, u)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, g, nil
}

// APIApplyConsensus applies the consensus rule (the project's leads), as
// the gold set page does, after setting the project's maximum spread when
// max_spread is given; all judges every complete item again. 200 with
// what the rule did.
func (s *Handler) APIApplyConsensus(r *http.Request, u *attune.User) (int, any, error) {
	ctx := r.Context()
	p, err := s.APILeadProject(r, u, "search its items")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		MaxSpread *int `json:"max_spread"`
		All       bool `json:"all"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	var res adjudication.Consensus
	if body.MaxSpread != nil {
		res, err = s.adjudication.SetMaxSpread(ctx, p.ID, &u.ID, *body.MaxSpread, body.All)
	} else {
		res, err = s.adjudication.ApplyConsensus(ctx, p.ID, &u.ID, body.All)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"items": res.Items, "automatic": res.Automatic, "queued": res.Queued, "max_spread": res.MaxSpread}, nil
}

type apiDisagreement struct {
	ItemID      int64     `json:"item_id"`
	SourceID    string    `json:"source_id"`
	Rank        float64   `json:"rank"`
	Safety      bool      `json:"safety_concern"`
	Signal      bool      `json:"na_despite_signals"`
	Reason      string    `json:"reason"`
	HumanRaters int       `json:"people"`
	ComputedAt  time.Time `json:"judged_at"`
}

// APIDisagreements is the disagreements queue (the project's leads), worst
// first as its page orders it, a page at a time by cursor.
func (s *Handler) APIDisagreements(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "read its disagreements")
	if err != nil {
		return 0, nil, err
	}
	page, err := kit.ReadPage(r)
	if err != nil {
		return 0, nil, err
	}
	ds, next, total, err := s.DB.DisagreementPage(r.Context(), p.ID, page.Cursor, page.Limit)
	if err != nil {
		return 0, nil, err
	}
	out := make([]apiDisagreement, 0, len(ds))
	for _, d := range ds {
		out = append(out, apiDisagreement{d.ItemID, d.SourceID, d.Rank, d.Safety, d.Signal, d.Reason, d.HumanRaters, d.ComputedAt.UTC()})
	}
	return http.StatusOK, map[string]any{"disagreements": out, "total": total, "next_cursor": kit.NextCursor(next)}, nil
}
