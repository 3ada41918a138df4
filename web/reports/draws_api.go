package reports

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/evaluation"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/web/kit"
)

// apiDraw is a draw as the API writes it. The seed is a string: a uint64
// does not fit a JSON number that every client reads exactly.
type apiDraw struct {
	ID        int64          `json:"id"`
	Seed      string         `json:"seed"`
	K         int            `json:"k"`
	SystemKey string         `json:"system_key"`
	System    *string        `json:"system"`
	Actor     string         `json:"actor"`
	CreatedAt time.Time      `json:"created_at"`
	Items     []apiDrawnItem `json:"items"`
}

type apiDrawnItem struct {
	ID       int64  `json:"id"`
	SourceID string `json:"source_id"`
}

func apiDrawOf(d store.Draw) apiDraw {
	out := apiDraw{ID: d.ID, Seed: strconv.FormatUint(d.Seed, 10), K: d.K, SystemKey: d.SystemKey, Actor: d.Actor, CreatedAt: d.CreatedAt,
		Items: make([]apiDrawnItem, len(d.Items))}
	if d.System != "" {
		out.System = &d.System
	}
	for i, it := range d.Items {
		out.Items[i] = apiDrawnItem{ID: it.ID, SourceID: it.SourceID}
	}
	return out
}

// APICreateDraw sends k uniformly random judge-only items of the project
// (of one system, if named) to people's queues: the flow of the page and
// of `attune draw`, for the project's leads.
func (s *Handler) APICreateDraw(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "draw items for people")
	if err != nil {
		return 0, nil, err
	}
	var in struct {
		K         *int            `json:"k"`
		System    string          `json:"system"`
		SystemKey string          `json:"system_key"`
		Seed      json.RawMessage `json:"seed"`
	}
	if err := kit.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	if in.K == nil {
		return 0, nil, attune.Invalid(evaluation.FieldK, "give k, the number of items to draw")
	}
	// The seed may come as a string or, when small enough, a number.
	seed, err := evaluation.ParseSeed(strings.Trim(string(in.Seed), `"`))
	if err != nil {
		return 0, nil, err
	}
	d, err := evaluation.Draw(r.Context(), s.DB, evaluation.DrawQuery{ProjectID: p.ID, ActorID: &u.ID, K: *in.K,
		System: in.System, SystemKey: p.SystemKeyOr(in.SystemKey), Seed: seed})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, apiDrawOf(d), nil
}

// APIDraws lists the project's draws, oldest first, for its leads.
func (s *Handler) APIDraws(r *http.Request, u *attune.User) (int, any, error) {
	p, err := s.APILeadProject(r, u, "read its draws")
	if err != nil {
		return 0, nil, err
	}
	draws, err := s.DB.ListDraws(r.Context(), p.ID)
	if err != nil {
		return 0, nil, err
	}
	out := make([]apiDraw, len(draws))
	for i, d := range draws {
		out[i] = apiDrawOf(d)
	}
	return http.StatusOK, map[string]any{"draws": out}, nil
}
