// Package annotate serves the annotator's workspace — the entry that
// resumes or claims work, the item page, and the posts that submit, skip,
// autosave a draft, open a content note and put off a break — and the
// labeling API that does the same for tokens, through the labeling flow
// both share.
package annotate

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/internal/wellbeing"
	"github.com/attune/attune/web/kit"
	aview "github.com/attune/attune/web/views/annotate"
)

// Session keys of the current stretch of work (Unix seconds), kept in the
// session so that it follows the annotator across tabs and replicas.
const (
	sessionWorkStart = "work_start"
	sessionWorkLast  = "work_last"
)

const (
	// maxLabelForm bounds a label, draft or skip form.
	maxLabelForm = 1 << 20
	// fallbackActiveCap caps the time spent on an item when no script
	// measured it and it is estimated from the clock.
	fallbackActiveCap = 15 * time.Minute
	// maxActive bounds the active time a browser may report for one item:
	// the rule every path keeps (the API refuses more with a 422; the
	// page's own measure is clamped to it).
	maxActive = attune.MaxActive
)

// Handler serves the annotator's workspace and the labeling API. Beside
// the kit it holds the labeling flow that pages and API share, the break
// rule, and what the pages need to be fast — the rubric panes rendered, a
// pool of page buffers — and lives as long as the routes that use it.
type Handler struct {
	*kit.Kit
	// labeling stores, changes and gives back a person's labels, for the
	// pages and the API alike.
	labeling *labeling.Flow
	// breakAfter is how long an annotator labels without a pause before
	// the workspace offers a break.
	breakAfter time.Duration
	// panes keeps the rubric panes rendered, by rubric version.
	panes *paneCache
	// pages holds buffers that pages are rendered into before writing.
	pages sync.Pool
}

// New returns the handler whose methods the route table lists. A
// breakAfter of 0 means wellbeing.DefaultBreakAfter.
func New(k *kit.Kit, flow *labeling.Flow, breakAfter time.Duration) *Handler {
	if breakAfter <= 0 {
		breakAfter = wellbeing.DefaultBreakAfter
	}
	ws := &Handler{Kit: k, labeling: flow, breakAfter: breakAfter, panes: newPaneCache(paneCacheSize)}
	ws.pages.New = func() any { return new(bytes.Buffer) }
	return ws
}

func itemPath(projectID, itemID int64) string {
	return fmt.Sprintf("/projects/%d/items/%d", projectID, itemID)
}

func annotatePath(projectID int64) string { return fmt.Sprintf("/projects/%d/annotate", projectID) }

// annotator loads the project and checks that the viewer annotates it.
// Others get forbidden (with a message) at the entry and not found on
// item routes.
func (ws *Handler) annotator(r *http.Request, entry bool) (*attune.Project, error) {
	p, role, err := ws.ProjectAccess(r, false)
	if err != nil {
		return nil, err
	}
	if role != attune.MemberAnnotator {
		if entry {
			return nil, attune.Forbidden("Only the project's annotators label it. A lead can add you as an annotator on the project page.")
		}
		return nil, attune.NotFound("item")
	}
	return p, nil
}

// Start is the workspace's entry, safe to follow from anywhere: it claims
// nothing. It sends the annotator to the item they hold, or shows why there
// is none (the queue is empty, the project paused), or offers to start:
// claiming is a POST (Claim).
func (ws *Handler) Start(w http.ResponseWriter, r *http.Request) error {
	p, err := ws.annotator(r, true)
	if err != nil {
		return err
	}
	q, err := ws.DB.PeekQueue(r.Context(), p.ID, kit.UserFrom(r.Context()).ID)
	if err != nil {
		return err
	}
	switch {
	case q.Held != nil:
		http.Redirect(w, r, itemPath(p.ID, q.Held.ItemID), http.StatusSeeOther)
		return nil
	case q.Status != attune.ProjectActive:
		return ws.renderNoItem(w, r, p, attune.Conflict(fmt.Sprintf("this project is %s: it hands out no work until a lead resumes it", q.Status)), "")
	case q.Stopped != nil:
		return ws.renderNoItem(w, r, p, q.Stopped, "")
	case !q.Open:
		return ws.renderNoItem(w, r, p, attune.ErrNoWork, "")
	}
	return ws.renderNoItem(w, r, p, errReady, "")
}

// errReady tells renderNoItem that work is waiting: it offers the button
// that claims it.
var errReady = errors.New("ready to start")

// Claim gives the annotator their next item (or resumes the one they hold)
// and shows it.
func (ws *Handler) Claim(w http.ResponseWriter, r *http.Request) error {
	p, err := ws.annotator(r, true)
	if err != nil {
		return err
	}
	ws.stretch(r, ws.Now())
	a, err := ws.DB.NextAssignment(r.Context(), p.ID, kit.UserFrom(r.Context()).ID)
	if err != nil && !errors.Is(err, attune.ErrNoWork) && !errors.Is(err, attune.ErrConflict) {
		return err
	}
	return ws.showNext(w, r, p, a, err, "")
}

// renderNoItem shows why there is no item on screen: the queue is empty
// for the annotator (err is attune.ErrNoWork), the project hands out no
// work (a conflict), or work waits to be claimed (errReady). Any other
// error is returned.
func (ws *Handler) renderNoItem(w http.ResponseWriter, r *http.Request, p *attune.Project, err error, notice string) error {
	e := aview.End{ProjectID: p.ID, ProjectName: p.Name, Notice: notice,
		Project: templ.SafeURL(kit.ProjectPath(p.ID)), Annotate: templ.SafeURL(annotatePath(p.ID))}
	switch {
	case errors.Is(err, errReady):
		e.Reason = "ready"
	case errors.Is(err, attune.ErrNoWork):
		e.Reason = "done"
	case errors.Is(err, attune.ErrConflict):
		e.Reason, e.Message = "paused", kit.Capitalize(attune.PublicMessage(err))+"."
	default:
		return err
	}
	submitted, latest, err := ws.DB.OwnLabels(r.Context(), p.ID, kit.UserFrom(r.Context()).ID)
	if err != nil {
		return err
	}
	e.Submitted = submitted
	if latest != 0 {
		e.Prev = templ.SafeURL(itemPath(p.ID, latest))
	}
	if kit.IsHX(r) {
		w.Header().Set("HX-Push-Url", annotatePath(p.ID))
	}
	ws.renderPart(w, r, http.StatusOK, "Label · "+p.Name, aview.Ended(e))
	return nil
}

// renderPart writes a workspace part: on its own for htmx, else framed as
// a whole page. The page is rendered into a buffer and written at once,
// with its length: one write instead of many small ones.
func (ws *Handler) renderPart(w http.ResponseWriter, r *http.Request, status int, title string, part templ.Component) {
	c := part
	if !kit.IsHX(r) {
		c = aview.Page(ws.Chrome(r, title, "home"), part)
	}
	buf := ws.pages.Get().(*bytes.Buffer)
	defer ws.pages.Put(buf)
	buf.Reset()
	if err := c.Render(r.Context(), buf); err != nil {
		ws.ServerError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// open loads the project and the item of the path, in one round trip, and
// checks that the viewer annotates the project and may see the item: it is
// their active (or lapsed) assignment, or one they submitted. Others get
// not found. With full unset it leaves out what only the page shows
// (draft, neighbours, counts).
func (ws *Handler) open(r *http.Request, full bool) (*attune.Project, *store.Workspace, error) {
	projectID, err := kit.PathInt(r, "id")
	if err != nil {
		return nil, nil, err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return nil, nil, err
	}
	p, role, wk, err := ws.DB.FindItemAccess(r.Context(), projectID, itemID, kit.UserFrom(r.Context()), full)
	switch {
	case err != nil:
		return nil, nil, err
	case role != attune.MemberAnnotator:
		return nil, nil, attune.NotFound("item")
	case wk.Answers == nil && !labeling.Holds(wk):
		return nil, nil, attune.NotFound("item")
	}
	return p, wk, nil
}

// Page shows one item: to label it, or to change one's submitted labels.
// The form holds the saved draft when there is one.
func (ws *Handler) Page(w http.ResponseWriter, r *http.Request) error {
	p, wk, err := ws.open(r, true)
	if err != nil {
		return err
	}
	st := savedState(wk)
	v, err := ws.view(r, p, wk, st, viewExtras{})
	if err != nil {
		return err
	}
	ws.renderView(w, r, http.StatusOK, p, v)
	return nil
}

func (ws *Handler) renderView(w http.ResponseWriter, r *http.Request, status int, p *attune.Project, v aview.Workspace) {
	ws.renderPart(w, r, status, "Label · "+p.Name, aview.View(v))
}

// Submit stores the answers of the item on screen (or changes the
// annotator's submitted ones) through the labeling flow shared with the
// API, and answers with the next item: claimed in the same transaction,
// so it is ready when the submit returns. Problems the engine finds come
// back beside the items they concern (422).
func (ws *Handler) Submit(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, wk, err := ws.open(r, false)
	if err != nil {
		return err
	}
	form, err := readLabelForm(w, r)
	if err != nil {
		return err
	}
	editing := form.mode == "edit"
	if !editing && wk.Assignment == nil {
		return attune.NotFound("item")
	}
	form.estimateActive(ws.Now(), wk)
	st := form.state()

	// The flow checks the answers with the engine, with every fact of the
	// dialogue (crisis signals included); its errors and unconfirmed
	// warnings come back as labeling.Problems, shown by storeFailed.
	in := labeling.Input{Answers: form.answers, Rationales: form.rationales, Rationale: form.rationale,
		ActiveMS: form.activeMS, ConfirmWarnings: form.confirm}
	// Turns typed that are not numbers are refused here, beside their
	// items, before anything is stored; whether the numbers are turns of
	// the dialogue that the answers may name is the rubric's to say, in
	// the flow.
	var bad rubric.Issues
	if in.Evidence, bad = labeling.ParseEvidence(form.evidence); len(bad) > 0 {
		return ws.problems(w, r, p, wk, st, bad)
	}

	if editing {
		ed, err := ws.labeling.Edit(ctx, kit.UserFrom(ctx), p, wk, in)
		if errors.Is(err, labeling.ErrNothingToEdit) {
			// Said as a refusal, not beside the answers: what is wrong is
			// the mode, and the form on screen is the one to submit.
			return err
		}
		if err != nil {
			return ws.storeFailed(w, r, p, wk, st, err)
		}
		notice := fmt.Sprintf("Saved your changes to %s (revision %d); the earlier answers are in the history.", wk.Item.SourceID, ed.Revision)
		return ws.continueWork(w, r, p, notice)
	}
	in.Next = true
	held := labeling.Held{Project: p, Item: &wk.Item, AssignmentID: wk.Assignment.ID, Key: wk.Key}
	res, err := ws.labeling.Submit(ctx, kit.UserFrom(ctx), held, in, kit.IsHX(r))
	if err != nil {
		return ws.storeFailed(w, r, p, wk, st, err)
	}
	if res.Calibration && res.WasQualifying && res.Created {
		// While the person qualifies, each practice answer is followed by
		// its feedback; the next item is claimed already.
		return ws.toFeedback(w, r, p, wk.Item.ID)
	}
	notice := "Submitted " + wk.Item.SourceID + "."
	if !res.Created {
		if res.Different {
			return ws.resubmitted(w, r, p, wk, form, res)
		}
		notice = "Your labels for " + wk.Item.SourceID + " were already submitted (another tab or a second click), with these same answers."
	}
	return ws.showLoaded(w, r, p, res.Next, res.NextWorkspace, res.NextErr, notice)
}

// resubmitted answers a submission whose assignment another tab (or an
// earlier submit) stored first with different answers: nothing of it is
// stored; both answer sets are shown side by side, with a form that keeps
// the new ones as an edit of the stored ones (the edit path, history kept)
// and a way on that discards them (409).
func (ws *Handler) resubmitted(w http.ResponseWriter, r *http.Request, p *attune.Project, wk *store.Workspace, form labelForm, res labeling.Submitted) error {
	def := res.Rubric // the rubric the submission was checked with
	first := res.Stored
	c := aview.Resubmitted{
		ProjectName: p.Name, ItemID: wk.Item.ID, SourceID: wk.Item.SourceID,
		Owner:    strconv.FormatInt(kit.UserFrom(r.Context()).ID, 10),
		StoredOn: first.Submitted.UTC().Format("2 Jan 2006, 15:04 UTC"), Revision: first.Revision,
		Submit:  itemPath(p.ID, wk.Item.ID) + "/labels",
		Discard: templ.SafeURL(annotatePath(p.ID)),
	}
	if res.Next != nil {
		c.Discard = templ.SafeURL(itemPath(p.ID, res.Next.ItemID))
	}
	second := labeling.CleanAnswers(form.answers)
	for _, it := range def.Items {
		d := aview.Difference{Key: it.Key, Label: it.Label, First: first.Answers[it.Key], Second: second[it.Key],
			FirstNote: first.Rationales[it.Key], SecondNote: form.rationales[it.Key]}
		d.Differs = d.First != d.Second || d.FirstNote != d.SecondNote
		c.Rows = append(c.Rows, d)
	}
	if first.Rationale != form.rationale {
		c.Rows = append(c.Rows, aview.Difference{Label: "Note on the whole dialogue", FirstNote: first.Rationale,
			SecondNote: form.rationale, Differs: true})
	}
	// Keeping posts this tab's answers again, as an edit of the revision
	// shown. The time spent is passed as measured: it was measured, or
	// estimated, when this tab submitted.
	c.Keep = []aview.Field{{Name: "mode", Value: "edit"}, {Name: "base", Value: strconv.Itoa(first.Revision)},
		{Name: "active_ms", Value: strconv.FormatInt(form.activeMS, 10)}, {Name: "clock", Value: "js"},
		{Name: "rationale", Value: form.rationale}}
	if form.confirm {
		c.Keep = append(c.Keep, aview.Field{Name: "confirm", Value: "yes"})
	}
	for _, it := range def.Items {
		if v, ok := second[it.Key]; ok {
			c.Keep = append(c.Keep, aview.Field{Name: "answer." + it.Key, Value: v})
		}
		if n, ok := form.rationales[it.Key]; ok {
			c.Keep = append(c.Keep, aview.Field{Name: "rationale." + it.Key, Value: n})
		}
		if turns, ok := form.evidence[it.Key]; ok {
			c.Keep = append(c.Keep, aview.Field{Name: "evidence." + it.Key, Value: turns})
		}
	}
	ws.renderPart(w, r, http.StatusConflict, "Label · "+p.Name, aview.Conflict(c))
	return nil
}

// storeFailed answers a submission the store or the engine refused: the
// rubric's problems beside the items, or, when the item is no longer the
// annotator's, a page that says so. Anything else is returned.
func (ws *Handler) storeFailed(w http.ResponseWriter, r *http.Request, p *attune.Project, wk *store.Workspace, st formState, err error) error {
	var lp *labeling.Problems
	switch {
	case errors.As(err, &lp):
		return ws.problems(w, r, p, wk, st, lp.Issues)
	case errors.Is(err, store.ErrNoteUnopened):
		// Only a page without its script, or a forged post, gets here: the
		// page locks the answers while the note shows.
		wk, err := ws.DB.FindWorkspace(r.Context(), p.ID, wk.Item.ID, kit.UserFrom(r.Context()).ID)
		if err != nil {
			return err
		}
		v, err := ws.view(r, p, wk, st, viewExtras{noteRefused: true})
		if err != nil {
			return err
		}
		ws.renderView(w, r, http.StatusUnprocessableEntity, p, v)
		return nil
	case errors.Is(err, attune.ErrConflict) && kit.IsHX(r):
		// htmx swaps 409 in (see the layout's htmx-config): say why here
		// rather than leave the form as if nothing happened.
		e := aview.End{ProjectID: p.ID, ProjectName: p.Name, Reason: "lost", Message: kit.Capitalize(attune.PublicMessage(err)) + ".",
			Project: templ.SafeURL(kit.ProjectPath(p.ID)), Annotate: templ.SafeURL(annotatePath(p.ID))}
		ws.Render(w, r, http.StatusConflict, aview.Ended(e))
		return nil
	}
	return err
}

// problems re-renders the form as submitted, with the engine's problems
// beside the items they concern: errors block, warnings ask to confirm.
func (ws *Handler) problems(w http.ResponseWriter, r *http.Request, p *attune.Project, wk *store.Workspace, st formState, issues rubric.Issues) error {
	// The submit read only what storing needs; the page needs the rest.
	wk, err := ws.DB.FindWorkspace(r.Context(), p.ID, wk.Item.ID, kit.UserFrom(r.Context()).ID)
	if err != nil {
		return err
	}
	v, err := ws.view(r, p, wk, st, viewExtras{issues: issues})
	if err != nil {
		return err
	}
	ws.renderView(w, r, http.StatusUnprocessableEntity, p, v)
	return nil
}

// showNext answers a submit or skip with the next item: htmx gets its
// workspace and the URL to show, a plain form post a redirect to it.
func (ws *Handler) showNext(w http.ResponseWriter, r *http.Request, p *attune.Project, next *attune.Assignment, nextErr error, notice string) error {
	return ws.showLoaded(w, r, p, next, nil, nextErr, notice)
}

// showLoaded is showNext with the next item's workspace when the caller
// read it already (nil otherwise).
func (ws *Handler) showLoaded(w http.ResponseWriter, r *http.Request, p *attune.Project, next *attune.Assignment, wk *store.Workspace, nextErr error, notice string) error {
	ctx := r.Context()
	if next == nil {
		if nextErr == nil {
			nextErr = attune.ErrNoWork
		}
		if !kit.IsHX(r) {
			ws.Flash(ctx, notice)
			http.Redirect(w, r, annotatePath(p.ID), http.StatusSeeOther)
			return nil
		}
		return ws.renderNoItem(w, r, p, nextErr, notice)
	}
	if !kit.IsHX(r) {
		ws.Flash(ctx, notice)
		http.Redirect(w, r, itemPath(p.ID, next.ItemID), http.StatusSeeOther)
		return nil
	}
	if wk == nil {
		var err error
		if wk, err = ws.DB.FindWorkspace(ctx, p.ID, next.ItemID, kit.UserFrom(ctx).ID); err != nil {
			return err
		}
	}
	v, err := ws.view(r, p, wk, savedState(wk), viewExtras{notice: notice})
	if err != nil {
		return err
	}
	setNextURL(w, r, itemPath(p.ID, next.ItemID))
	ws.renderView(w, r, http.StatusOK, p, v)
	return nil
}

// setNextURL has htmx show path in the address bar after a submit: pushed
// as a new history entry, or put in place of the current one when the page
// is at path already (a second Enter, or a click on Submit, sent while the
// first submit was swapping the next item in: it is answered with that
// same item), so that Back still returns to the item submitted instead of
// to a copy of the one on screen.
func setNextURL(w http.ResponseWriter, r *http.Request, path string) {
	if cur, err := url.Parse(r.Header.Get("HX-Current-URL")); err == nil && cur.Path == path {
		w.Header().Set("HX-Replace-Url", path)
		return
	}
	w.Header().Set("HX-Push-Url", path)
}

// continueWork returns the annotator to the item they are labelling (or
// their next one) after they changed an earlier label.
func (ws *Handler) continueWork(w http.ResponseWriter, r *http.Request, p *attune.Project, notice string) error {
	a, err := ws.DB.NextAssignment(r.Context(), p.ID, kit.UserFrom(r.Context()).ID)
	if err != nil && !errors.Is(err, attune.ErrNoWork) && !errors.Is(err, attune.ErrConflict) {
		return err
	}
	return ws.showNext(w, r, p, a, err, notice)
}

// Skip gives the item back through the labeling flow shared with the
// API, flagged or not, and shows the next one.
func (ws *Handler) Skip(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, wk, err := ws.open(r, false)
	if err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLabelForm)
	flag := strings.TrimSpace(r.PostFormValue("flag"))
	u := kit.UserFrom(ctx)
	if wk.Assignment == nil {
		// Labels of the person's that were never handed out (imported):
		// there is no assignment to give back.
		return store.ErrSkipLabelled
	}
	if err := ws.labeling.Skip(ctx, u, wk.Assignment.ID, flag, r.PostFormValue("note")); err != nil {
		return err
	}
	notice := "Skipped " + wk.Item.SourceID + "."
	switch flag {
	case "":
	case "distressing":
		notice = "Skipped " + wk.Item.SourceID + " and flagged it as distressing for the leads. Take a moment before the next one if you need it."
	default:
		notice = fmt.Sprintf("Skipped %s and flagged it as %s for the leads.", wk.Item.SourceID, flag)
	}
	a, err := ws.DB.NextAssignment(ctx, p.ID, u.ID)
	if err != nil && !errors.Is(err, attune.ErrNoWork) && !errors.Is(err, attune.ErrConflict) {
		return err
	}
	return ws.showNext(w, r, p, a, err, notice)
}

// OpenNote records that the annotator opened the item's content note
// (the labeling flow, as the API's content-note does) and shows the
// dialogue: 204 for the page's script, which shows it itself, a redirect
// to the item for a plain form post.
func (ws *Handler) OpenNote(w http.ResponseWriter, r *http.Request) error {
	p, wk, err := ws.open(r, false)
	if err != nil {
		return err
	}
	if err := ws.labeling.OpenNote(r.Context(), kit.UserFrom(r.Context()), p.ID, wk.Item.ID); err != nil {
		return err
	}
	if kit.IsHX(r) {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	http.Redirect(w, r, itemPath(p.ID, wk.Item.ID), http.StatusSeeOther)
	return nil
}

// Draft keeps what the annotator has chosen and typed so far: 204 when
// saved, 409 when the item's answers were stored or it was skipped since.
func (ws *Handler) Draft(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	p, err := ws.annotator(r, false)
	if err != nil {
		return err
	}
	itemID, err := kit.PathInt(r, "item")
	if err != nil {
		return err
	}
	form, err := readLabelForm(w, r)
	if err != nil {
		return err
	}
	def, err := ws.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return err
	}
	form.keepKnown(def)
	// A draft holds answers to the rubric's items only; the values are
	// checked when the answers are submitted.
	for k := range form.answers {
		if _, ok := def.Item(k); !ok {
			delete(form.answers, k)
		}
	}
	ok, err := ws.DB.SaveDraft(ctx, p.ID, itemID, kit.UserFrom(ctx).ID, store.Draft{Answers: form.answers,
		Rationales: form.rationales, Evidence: form.evidence, Rationale: form.rationale, ActiveMS: form.activeMS, Base: form.base})
	if err != nil {
		return err
	}
	ws.stretch(r, ws.Now())
	w.Header().Set("Cache-Control", "no-store")
	if !ok {
		w.WriteHeader(http.StatusConflict)
		return nil
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// KeepGoing puts off the break: the stretch of work starts afresh.
func (ws *Handler) KeepGoing(w http.ResponseWriter, r *http.Request) error {
	p, err := ws.annotator(r, false)
	if err != nil {
		return err
	}
	now := ws.Now().Unix()
	ws.Sessions.Put(r.Context(), sessionWorkStart, now)
	ws.Sessions.Put(r.Context(), sessionWorkLast, now)
	if kit.IsHX(r) {
		// htmx removes the note itself (hx-swap="delete").
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return nil
	}
	back := annotatePath(p.ID)
	if item, err := strconv.ParseInt(r.PostFormValue("item"), 10, 64); err == nil && item > 0 {
		back = itemPath(p.ID, item)
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

// stretch records that the annotator is working at now and returns their
// current stretch of work. The session keeps whole seconds and is written
// only when the stretch starts or a minute has passed, so that autosaves
// do not write it each time.
func (ws *Handler) stretch(r *http.Request, now time.Time) wellbeing.Stretch {
	ctx := r.Context()
	var st wellbeing.Stretch
	if start := ws.Sessions.GetInt64(ctx, sessionWorkStart); start != 0 {
		st = wellbeing.Stretch{Start: time.Unix(start, 0), Last: time.Unix(ws.Sessions.GetInt64(ctx, sessionWorkLast), 0)}
	}
	next := st.Visit(now)
	if next.Start.Unix() != st.Start.Unix() || next.Last.Sub(st.Last) >= time.Minute {
		ws.Sessions.Put(ctx, sessionWorkStart, next.Start.Unix())
		ws.Sessions.Put(ctx, sessionWorkLast, next.Last.Unix())
		next.Start = time.Unix(next.Start.Unix(), 0)
	}
	return next
}
