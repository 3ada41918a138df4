package annotate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/web/kit"
)

type apiAssignment struct {
	Assignment struct {
		ID             int64     `json:"id"`
		LeaseExpiresAt time.Time `json:"lease_expires_at"`
	} `json:"assignment"`
	Rubric string  `json:"rubric"`
	Item   apiItem `json:"item"`
}

type apiItem struct {
	ID       int64            `json:"id"`
	SourceID string           `json:"source_id"`
	Kind     string           `json:"kind"`
	Turns    int              `json:"turns"`
	Messages []attune.Message `json:"messages"`
	Meta     json.RawMessage  `json:"meta"`
	// ContentNote is set when the item is behind a content note: a client
	// shows the note first, and records with POST …/content-note that the
	// person opened it before their answers can be stored.
	ContentNote *apiContentNote `json:"content_note,omitempty"`
}

// apiContentNote says why an item is behind a content note.
type apiContentNote struct {
	Words  []string `json:"words"`  // words of the wellbeing list found in it
	Marked bool     `json:"marked"` // a lead marked it
}

func (ws *Handler) assignmentBody(ctx context.Context, p *attune.Project, a *attune.Assignment) (*apiAssignment, error) {
	it, err := ws.DB.FindItem(ctx, p.ID, a.ItemID)
	if err != nil {
		return nil, err
	}
	out := &apiAssignment{Rubric: p.RubricRef, Item: apiItem{ID: it.ID, SourceID: it.SourceID, Kind: it.Kind, Turns: it.Turns,
		Messages: it.Messages, Meta: it.Meta}}
	if f := labeling.FactsOf(it); f.BehindNote() {
		out.Item.ContentNote = &apiContentNote{Words: append([]string{}, f.Terms...), Marked: f.Marked}
	}
	out.Assignment.ID, out.Assignment.LeaseExpiresAt = a.ID, a.LeaseExpiresAt
	return out, nil
}

// APINext hands out the annotator's next item: 200 with it, or 204 when
// nothing is left for them.
func (ws *Handler) APINext(r *http.Request, u *attune.User) (int, any, error) {
	p, _, err := ws.APIProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	a, err := ws.DB.NextAssignment(r.Context(), p.ID, u.ID)
	if errors.Is(err, attune.ErrNoWork) {
		return http.StatusNoContent, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	body, err := ws.assignmentBody(r.Context(), p, a)
	return http.StatusOK, body, err
}

// apiLabels is the body of a submission or an edit.
type apiLabels struct {
	Answers    map[string]string `json:"answers"`
	Rationales map[string]string `json:"rationales"`
	// Evidence is the turns where each failing answer fails, by item
	// key, held to the project's policy by the labeling flow.
	Evidence        rubric.Evidence `json:"evidence"`
	Rationale       string          `json:"rationale"`
	ActiveMS        int64           `json:"active_ms"`
	ConfirmWarnings bool            `json:"confirm_warnings"`
	Next            bool            `json:"next"`
}

func (b apiLabels) input() labeling.Input {
	return labeling.Input{Answers: b.Answers, Rationales: b.Rationales, Evidence: b.Evidence, Rationale: b.Rationale,
		ActiveMS: b.ActiveMS, ConfirmWarnings: b.ConfirmWarnings, Next: b.Next}
}

type apiSubmitted struct {
	AnswerSetID int64          `json:"answer_set_id"`
	Created     bool           `json:"created"`
	Score       scoring.Result `json:"score"`
	Next        *apiAssignment `json:"next,omitempty"`
	NextReason  string         `json:"next_reason,omitempty"`
}

// APISubmit stores the answers of an assignment, validated by the engine as
// the annotator's page validates them. 201 when stored, 200 when the
// assignment had been submitted already (a retry), with the engine's score
// and, when asked for, the next assignment.
func (ws *Handler) APISubmit(r *http.Request, u *attune.User) (int, any, error) {
	id, err := kit.PathInt(r, "id")
	if err != nil {
		return 0, nil, err
	}
	var body apiLabels
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	held, res, err := ws.labeling.SubmitAssignment(r.Context(), u, id, body.input())
	if err != nil {
		return 0, nil, err
	}
	if res.Different {
		// A retry of the same answers is safe; different ones are never
		// dropped silently.
		return 0, nil, attune.Conflict(fmt.Sprintf("this assignment was submitted already with other answers, which are kept; these were not stored. "+
			"To change them, edit your labels: PUT /api/v1/projects/%d/items/%d/labels", held.Project.ID, held.Item.ID))
	}
	out := apiSubmitted{AnswerSetID: res.AnswerSetID, Created: res.Created, Score: res.Score}
	if res.Next != nil {
		// The next item is claimed in the assignment's project.
		if out.Next, err = ws.assignmentBody(r.Context(), held.Project, res.Next); err != nil {
			return 0, nil, err
		}
	} else if res.NextErr != nil {
		out.NextReason = kit.OrDefault(attune.PublicMessage(res.NextErr), res.NextErr.Error())
	}
	status := http.StatusCreated
	if !res.Created {
		status = http.StatusOK
	}
	return status, out, nil
}

type apiOwn struct {
	ItemID     int64             `json:"item_id"`
	Answers    map[string]string `json:"answers"`
	Rationales map[string]string `json:"rationales"`
	Evidence   rubric.Evidence   `json:"evidence"` // the turns marked on failing answers
	Rationale  string            `json:"rationale"`
	Revision   int               `json:"revision"`
	Score      scoring.Result    `json:"score"`
}

// APIOwnLabels returns the caller's own labels for an item (never anyone
// else's: labelling is blind).
func (ws *Handler) APIOwnLabels(r *http.Request, u *attune.User) (int, any, error) {
	p, _, err := ws.APIProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return 0, nil, err
	}
	set, err := ws.DB.FindOwnAnswerSet(r.Context(), p.ID, itemID, u.ID)
	if err != nil {
		return 0, nil, err
	}
	item, err := ws.DB.FindItem(r.Context(), p.ID, itemID)
	if err != nil {
		return 0, nil, err
	}
	def, err := ws.DB.FindRubricByID(r.Context(), p.RubricVersionID)
	if err != nil {
		return 0, nil, err
	}
	answers := rubric.Answers{}
	for k, v := range set.Answers {
		answers[k] = rubric.Value(v)
	}
	score, err := scoring.Score(def, answers, labeling.FactsOf(item))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, apiOwn{ItemID: itemID, Answers: set.Answers, Rationales: set.Rationales, Evidence: set.Evidence,
		Rationale: set.Rationale, Revision: set.Revision, Score: score}, nil
}

// APIUpdateLabels edits the caller's own submitted labels for an item,
// validated as a submission is; the earlier values stay in the history.
func (ws *Handler) APIUpdateLabels(r *http.Request, u *attune.User) (int, any, error) {
	p, role, err := ws.APIProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	if role != attune.MemberAnnotator {
		return 0, nil, attune.NotFound("you have no labels for this item")
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return 0, nil, err
	}
	var body apiLabels
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	ed, err := ws.labeling.EditItem(r.Context(), u, p, itemID, body.input())
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"item_id": itemID, "revision": ed.Revision, "score": ed.Score}, nil
}

// APIOpenContentNote records that the caller opened the content note of
// an item they were given or labelled (404 otherwise): their answers to an
// item behind a note are refused until then. 204; opening again changes
// nothing.
func (ws *Handler) APIOpenContentNote(r *http.Request, u *attune.User) (int, any, error) {
	p, role, err := ws.APIProjectAccess(r.Context(), r, u)
	if err != nil {
		return 0, nil, err
	}
	if role != attune.MemberAnnotator {
		return 0, nil, attune.NotFound("item not found")
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return 0, nil, err
	}
	if err := ws.labeling.OpenNote(r.Context(), u, p.ID, itemID); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}

// APISkip gives an assignment back without labels through the labeling
// flow shared with the page, with an optional flag (broken, off-topic,
// distressing, other) and note.
func (ws *Handler) APISkip(r *http.Request, u *attune.User) (int, any, error) {
	id, err := kit.PathInt(r, "id")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Flag string `json:"flag"`
		Note string `json:"note"`
	}
	if err := kit.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if err := ws.labeling.Skip(r.Context(), u, id, body.Flag, body.Note); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, nil
}
