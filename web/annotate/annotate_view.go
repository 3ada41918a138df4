package annotate

import (
	"context"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"strconv"
	"strings"
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

// formState is what the form on screen holds: answers chosen and notes
// typed, whether they come from a draft, the stored answers or a post.
type formState struct {
	answers    map[string]string
	rationales map[string]string
	// evidence is the turns marked, by item key, as typed ("2, 5").
	evidence  map[string]string
	rationale string
	activeMS  int64
	base      int // revision of the stored answers being edited; 0 when labelling
	restored  bool
	draftAt   time.Time
}

// savedState is the form as the annotator left it: the draft when there is
// one, else their submitted answers, else nothing.
func savedState(wk *store.Workspace) formState {
	st := formState{}
	if wk.Answers != nil {
		st = formState{answers: wk.Answers.Answers, rationales: wk.Answers.Rationales, rationale: wk.Answers.Rationale, base: wk.Answers.Revision,
			evidence: map[string]string{}}
		for k, turns := range wk.Answers.Evidence {
			st.evidence[k] = labeling.TurnsText(turns)
		}
	}
	if d := wk.Draft; d != nil {
		// A draft keeps the turns as they were in the form, those cleared
		// left out, so it is restored as it is.
		st = formState{answers: d.Answers, rationales: d.Rationales, evidence: d.Evidence, rationale: d.Rationale, activeMS: d.ActiveMS,
			base: st.base, restored: true, draftAt: d.UpdatedAt}
	}
	return st
}

// restoresWork reports whether the form brings back work the person would
// otherwise have lost: a draft with an answer or a note in it that differs
// from the answers submitted (nil when labelling afresh). A draft that
// only keeps the time spent restores nothing worth announcing.
func (st formState) restoresWork(submitted *store.AnswerSet) bool {
	if !st.restored {
		return false
	}
	answers, rationales, turns := labeling.CleanAnswers(st.answers), labeling.CleanAnswers(st.rationales), labeling.CleanAnswers(st.evidence)
	if submitted == nil {
		return len(answers) > 0 || len(rationales) > 0 || len(turns) > 0 || st.rationale != ""
	}
	stored := map[string]string{}
	for k, t := range submitted.Evidence {
		stored[k] = labeling.TurnsText(t)
	}
	return !maps.Equal(answers, labeling.CleanAnswers(submitted.Answers)) || !maps.Equal(rationales, labeling.CleanAnswers(submitted.Rationales)) ||
		!maps.Equal(turns, labeling.CleanAnswers(stored)) || st.rationale != submitted.Rationale
}

// labelForm is a label, draft or skip form as posted.
type labelForm struct {
	answers    map[string]string
	rationales map[string]string
	evidence   map[string]string // the turns typed or marked, by item key; read by labeling.ParseEvidence
	rationale  string
	activeMS   int64
	measured   bool  // the page's script measured activeMS
	openedAt   int64 // when the page was rendered, Unix ms
	confirm    bool
	mode       string // label or edit
	base       int
}

// readLabelForm reads the fields answer.KEY, rationale.KEY, evidence.KEY, rationale,
// active_ms, clock, opened_at, confirm, mode and base, from a form post or
// a beacon's multipart body.
func readLabelForm(w http.ResponseWriter, r *http.Request) (labelForm, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxLabelForm)
	var err error
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "multipart/form-data" {
		err = r.ParseMultipartForm(maxLabelForm)
	} else {
		err = r.ParseForm()
	}
	if err != nil {
		return labelForm{}, attune.Invalid("form", "the form could not be read; reload the page and try again")
	}
	f := labelForm{answers: map[string]string{}, rationales: map[string]string{}, evidence: map[string]string{}}
	for k, vs := range r.PostForm {
		if len(vs) == 0 {
			continue
		}
		v := vs[0]
		switch {
		case strings.HasPrefix(k, "answer."):
			f.answers[strings.TrimPrefix(k, "answer.")] = strings.TrimSpace(v)
		case strings.HasPrefix(k, "rationale."):
			if v = labeling.CleanNote(v); v != "" {
				f.rationales[strings.TrimPrefix(k, "rationale.")] = v
			}
		case strings.HasPrefix(k, "evidence."):
			if v = strings.TrimSpace(v); v != "" {
				f.evidence[strings.TrimPrefix(k, "evidence.")] = v
			}
		}
	}
	f.rationale = labeling.CleanNote(r.PostFormValue("rationale"))
	f.activeMS, _ = strconv.ParseInt(r.PostFormValue("active_ms"), 10, 64)
	f.activeMS = min(max(f.activeMS, 0), maxActive.Milliseconds())
	f.measured = r.PostFormValue("clock") == "js"
	f.openedAt, _ = strconv.ParseInt(r.PostFormValue("opened_at"), 10, 64)
	f.confirm = r.PostFormValue("confirm") != ""
	f.mode = r.PostFormValue("mode")
	f.base, _ = strconv.Atoi(r.PostFormValue("base"))
	f.base = max(f.base, 0)
	return f, nil
}

// keepKnown drops notes and turns on items the rubric does not have from a draft:
// only a forged form sends them, and a submission of them is refused
// outright (labeling.Check), on the page as through the API.
func (f *labelForm) keepKnown(def *rubric.Definition) {
	for _, m := range []map[string]string{f.rationales, f.evidence} {
		for k := range m {
			if _, ok := def.Item(k); !ok {
				delete(m, k)
			}
		}
	}
}

// estimateActive fills in the time spent on the item when no script
// measured it: the time since the item was handed out (labelling) or the
// Page was opened (editing), capped, since the person may have been away.
func (f *labelForm) estimateActive(now time.Time, wk *store.Workspace) {
	if f.measured {
		return
	}
	var since time.Time
	switch {
	case f.mode != "edit" && wk.Assignment != nil:
		since = wk.Assignment.AssignedAt
	case f.openedAt > 0:
		since = time.UnixMilli(f.openedAt)
	default:
		return
	}
	if d := now.Sub(since); d > 0 {
		f.activeMS = min(d, fallbackActiveCap).Milliseconds()
	}
}

func (f labelForm) state() formState {
	return formState{answers: f.answers, rationales: f.rationales, evidence: f.evidence, rationale: f.rationale, activeMS: f.activeMS, base: f.base}
}

// itemFacts are the facts the rubric is checked with (as factsOf works
// them out), the first word of the wellbeing list the dialogue contains,
// if any, for the content note, and the list's matches in each message,
// for the page to highlight: the messages are scanned once for all three.
func itemFacts(item *attune.Item) (rubric.Facts, string, [][]wellbeing.Match) {
	found := make([][]wellbeing.Match, len(item.Messages))
	for i, m := range item.Messages {
		found[i] = wellbeing.Matches(m.Content)
	}
	f := rubric.FactsFound(item.Turns, found, item.Sensitive)
	if len(f.Terms) > 0 {
		return f, f.Terms[0], found
	}
	return f, "", found
}

// viewExtras are what a request adds to the workspace beyond the item and
// the form: a notice, the engine's problems, and whether answers were just
// refused because the content note was not opened.
type viewExtras struct {
	notice      string
	issues      rubric.Issues
	noteRefused bool
}

// view builds the workspace for one item as the viewer sees it.
func (ws *Handler) view(r *http.Request, p *attune.Project, wk *store.Workspace, st formState, x viewExtras) (aview.Workspace, error) {
	ctx := r.Context()
	def, err := ws.DB.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return aview.Workspace{}, err
	}
	counts, err := ws.counts(ctx, p.ID, wk)
	if err != nil {
		return aview.Workspace{}, err
	}
	now := ws.Now()
	u := kit.UserFrom(ctx)
	item := wk.Item
	facts, term, found := itemFacts(&item)
	v := aview.Workspace{
		ProjectID:   p.ID,
		ProjectName: p.Name,
		ItemID:      item.ID,
		SourceID:    item.SourceID,
		Editing:     wk.Answers != nil,
		Notice:      x.notice,
		Owner:       strconv.FormatInt(u.ID, 10),
		Rationale:   st.rationale,
		ActiveMS:    st.activeMS,
		Base:        st.base,
		OpenedAt:    now.UnixMilli(),
		Restored:    st.restoresWork(wk.Answers),
		Dialogue:    aview.DialogueOf(def, item, found),
		Expanded:    u.RubricExpanded,
		Evidence:    string(p.Evidence()),
		URLs: aview.URLs{
			Item:      templ.SafeURL(itemPath(p.ID, item.ID)),
			Submit:    itemPath(p.ID, item.ID) + "/labels",
			Skip:      templ.SafeURL(itemPath(p.ID, item.ID) + "/skip"),
			Draft:     itemPath(p.ID, item.ID) + "/draft",
			OpenNote:  templ.SafeURL(itemPath(p.ID, item.ID) + "/open"),
			Project:   templ.SafeURL(kit.ProjectPath(p.ID)),
			Annotate:  templ.SafeURL(annotatePath(p.ID)),
			KeepGoing: templ.SafeURL(fmt.Sprintf("/projects/%d/break", p.ID)),
			Expand:    templ.SafeURL("/account/rubric"),
		},
		Progress: aview.Progress{Submitted: wk.Submitted, Left: max(counts.Open-wk.SeenOpen, 0)},
	}
	if counts.Needed > 0 {
		v.Progress.ProjectPercent = counts.Labels * 100 / counts.Needed
	}
	if st.restored {
		v.DraftAt = st.draftAt.UnixMilli()
	}
	if wk.Answers != nil {
		v.Revision = wk.Answers.Revision
		v.SubmittedOn = wk.Answers.Submitted.UTC().Format("2 Jan 2006, 15:04 UTC")
	}
	if wk.PrevItem != 0 {
		v.URLs.Prev = templ.SafeURL(itemPath(p.ID, wk.PrevItem))
	}
	switch {
	case wk.NextItem != 0:
		v.URLs.Next = templ.SafeURL(itemPath(p.ID, wk.NextItem))
	case v.Editing && wk.CurrentItem != 0:
		v.URLs.Back = templ.SafeURL(itemPath(p.ID, wk.CurrentItem))
	case v.Editing:
		v.URLs.Back = templ.SafeURL(annotatePath(p.ID))
	}
	// The note stays until the annotator opens it; the opening is stored,
	// so a refresh or a later visit shows the dialogue.
	if facts.BehindNote() && !wk.NoteOpened {
		v.Note = &aview.ContentNote{Term: term, Refused: x.noteRefused}
	}
	if s := ws.stretch(r, now); s.Due(now, ws.breakAfter) {
		v.Break = &aview.Break{Minutes: int(s.Length(now) / time.Minute)}
	}
	for _, f := range attune.Flags {
		v.Flags = append(v.Flags, aview.Flag{Value: f, Label: kit.FlagLabels[f]})
	}
	rp, err := ws.panes.get(ctx, p.RubricVersionID, def)
	if err != nil {
		return aview.Workspace{}, err
	}
	v.Rubric, v.Problems = aview.FillRubric(def, rp.base, facts, st.answers, st.rationales, x.issues)
	v.Rubric.Pane = rp.pane
	for _, g := range v.Rubric.Groups {
		for i := range g.Items { // FillRubric gave each group its own items
			g.Items[i].Turns = st.evidence[g.Items[i].Key]
		}
	}
	return v, nil
}

// counts returns the project's label counts: those read with the
// workspace, or else read now (a few rows, kept up to date by every
// Submit).
func (ws *Handler) counts(ctx context.Context, projectID int64, wk *store.Workspace) (store.LabelCounts, error) {
	if wk.Counts != nil {
		return *wk.Counts, nil
	}
	return ws.DB.CountLabels(ctx, projectID)
}
