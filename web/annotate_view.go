package web

import (
	"context"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a-h/templ"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/labeling"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
	"github.com/attune/attune/internal/wellbeing"
	"github.com/attune/attune/web/views/annotate"
)

// formState is what the form on screen holds: answers chosen and notes
// typed, whether they come from a draft, the stored answers or a post.
type formState struct {
	answers    map[string]string
	rationales map[string]string
	rationale  string
	activeMS   int64
	base       int // revision of the stored answers being edited; 0 when labelling
	restored   bool
	draftAt    time.Time
}

// savedState is the form as the annotator left it: the draft when there is
// one, else their submitted answers, else nothing.
func savedState(wk *store.Workspace) formState {
	st := formState{}
	if wk.Answers != nil {
		st = formState{answers: wk.Answers.Answers, rationales: wk.Answers.Rationales, rationale: wk.Answers.Rationale, base: wk.Answers.Revision}
	}
	if d := wk.Draft; d != nil {
		st = formState{answers: d.Answers, rationales: d.Rationales, rationale: d.Rationale, activeMS: d.ActiveMS,
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
	answers, rationales := cleanAnswers(st.answers), cleanAnswers(st.rationales)
	if submitted == nil {
		return len(answers) > 0 || len(rationales) > 0 || st.rationale != ""
	}
	return !maps.Equal(answers, cleanAnswers(submitted.Answers)) || !maps.Equal(rationales, cleanAnswers(submitted.Rationales)) ||
		st.rationale != submitted.Rationale
}

// labelForm is a label, draft or skip form as posted.
type labelForm struct {
	answers    map[string]string
	rationales map[string]string
	rationale  string
	activeMS   int64
	measured   bool  // the page's script measured activeMS
	openedAt   int64 // when the page was rendered, Unix ms
	confirm    bool
	mode       string // label or edit
	base       int
}

// readLabelForm reads the fields answer.KEY, rationale.KEY, rationale,
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
	f := labelForm{answers: map[string]string{}, rationales: map[string]string{}}
	for k, vs := range r.PostForm {
		if len(vs) == 0 {
			continue
		}
		v := vs[0]
		switch {
		case strings.HasPrefix(k, "answer."):
			f.answers[strings.TrimPrefix(k, "answer.")] = strings.TrimSpace(v)
		case strings.HasPrefix(k, "rationale."):
			if v = textarea(v); v != "" {
				f.rationales[strings.TrimPrefix(k, "rationale.")] = v
			}
		}
	}
	f.rationale = textarea(r.PostFormValue("rationale"))
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

// textarea returns what was typed as a note is kept (labeling.CleanNote).
func textarea(s string) string { return labeling.CleanNote(s) }

// keepKnown drops notes on items the rubric does not have from a draft:
// only a forged form sends them, and a submission of them is refused
// outright (labeling.Check), on the page as through the API.
func (f *labelForm) keepKnown(def *rubric.Definition) {
	for k := range f.rationales {
		if _, ok := def.Item(k); !ok {
			delete(f.rationales, k)
		}
	}
}

// estimateActive fills in the time spent on the item when no script
// measured it: the time since the item was handed out (labelling) or the
// page was opened (editing), capped, since the person may have been away.
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
	return formState{answers: f.answers, rationales: f.rationales, rationale: f.rationale, activeMS: f.activeMS, base: f.base}
}

func toAnswers(in map[string]string) rubric.Answers {
	out := make(rubric.Answers, len(in))
	for k, v := range in {
		out[k] = rubric.Value(v)
	}
	return out
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

// flagLabels name the reasons an item can be flagged, in attune.Flags
// order.
var flagLabels = map[string]string{
	"broken":      "Broken (garbled, cut off, empty)",
	"off-topic":   "Off-topic (not a supportive dialogue)",
	"distressing": "Distressing to read",
	"other":       "Something else (say what in the note)",
}

// view builds the workspace for one item as the viewer sees it.
func (ws *workspace) view(r *http.Request, p *attune.Project, wk *store.Workspace, st formState, x viewExtras) (annotate.Workspace, error) {
	ctx := r.Context()
	def, err := ws.db.FindRubricByID(ctx, p.RubricVersionID)
	if err != nil {
		return annotate.Workspace{}, err
	}
	counts, err := ws.counts(ctx, p.ID, wk)
	if err != nil {
		return annotate.Workspace{}, err
	}
	now := ws.now()
	u := userFrom(ctx)
	item := wk.Item
	facts, term, found := itemFacts(&item)
	v := annotate.Workspace{
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
		Dialogue:    dialogueView(def, item, found),
		Expanded:    u.RubricExpanded,
		URLs: annotate.URLs{
			Item:      templ.SafeURL(itemPath(p.ID, item.ID)),
			Submit:    itemPath(p.ID, item.ID) + "/labels",
			Skip:      templ.SafeURL(itemPath(p.ID, item.ID) + "/skip"),
			Draft:     itemPath(p.ID, item.ID) + "/draft",
			OpenNote:  templ.SafeURL(itemPath(p.ID, item.ID) + "/open"),
			Project:   templ.SafeURL(projectPath(p.ID)),
			Annotate:  templ.SafeURL(annotatePath(p.ID)),
			KeepGoing: templ.SafeURL(fmt.Sprintf("/projects/%d/break", p.ID)),
			Expand:    templ.SafeURL("/account/rubric"),
		},
		Progress: annotate.Progress{Submitted: wk.Submitted, Left: max(counts.Open-wk.SeenOpen, 0)},
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
		v.Note = &annotate.ContentNote{Term: term, Refused: x.noteRefused}
	}
	if s := ws.stretch(r, now); s.Due(now, ws.breakAfter()) {
		v.Break = &annotate.Break{Minutes: int(s.Length(now) / time.Minute)}
	}
	for _, f := range attune.Flags {
		v.Flags = append(v.Flags, annotate.Flag{Value: f, Label: flagLabels[f]})
	}
	rp, err := ws.panes.get(ctx, p.RubricVersionID, def)
	if err != nil {
		return annotate.Workspace{}, err
	}
	v.Rubric, v.Problems = fillRubric(def, rp.base, facts, st, x.issues)
	v.Rubric.Pane = rp.pane
	return v, nil
}

// dialogueView numbers the turns as the rubrics count them — a user
// message and the reply to it share a number (dataset.TurnNumbers) — and marks the reply a
// reply-level rubric rates: the last assistant message. found holds the
// wellbeing list's matches in each message (nil to scan them here).
func dialogueView(def *rubric.Definition, item attune.Item, found [][]wellbeing.Match) annotate.Dialogue {
	d := annotate.Dialogue{Turns: item.Turns, Messages: make([]annotate.Message, len(item.Messages))}
	// The heading follows the rubric's unit, not the dialogue's length:
	// a conversation rubric rates the conversation even when it is one
	// exchange long.
	switch def.Unit {
	case rubric.Reply:
		d.Heading, d.Rated = "Reply", "the assistant's reply (marked)"
	case rubric.LastReply:
		d.Heading, d.Rated = "Reply, in its conversation", "the last assistant reply (marked), read in context"
	default:
		d.Heading, d.Rated = "Conversation", "the whole conversation"
	}
	rated := -1
	if def.Unit == rubric.Reply || def.Unit == rubric.LastReply {
		for i, m := range item.Messages {
			if m.Role == "assistant" {
				rated = i
			}
		}
	}
	// Numbered by the dataset's own rule, so that no message carries a
	// number past the turns the rubric counts (a trailing user message,
	// a greeting before the first one, have none).
	roles := make([]dataset.Message, len(item.Messages))
	for i, m := range item.Messages {
		roles[i] = dataset.Message{Role: m.Role}
	}
	turns := dataset.TurnNumbers(roles)
	for i, m := range item.Messages {
		var matches []wellbeing.Match
		if found != nil {
			matches = found[i]
		} else {
			matches = wellbeing.Matches(m.Content)
		}
		msg := annotate.Message{Role: m.Role, Text: m.Content, Parts: signalParts(m.Content, matches), Rated: i == rated}
		switch m.Role {
		case "user":
			msg.Turn, msg.Who = turns[i], "User"
		case "assistant":
			msg.Turn, msg.Who = turns[i], "Assistant"
		case "system":
			msg.Who = "System message"
		default:
			msg.Role, msg.Who = "other", m.Role
		}
		d.Messages[i] = msg
	}
	return d
}

// signalParts cuts a message where the wellbeing word list found a word
// (matches), for the page to highlight it; nil when it found none.
func signalParts(text string, matches []wellbeing.Match) []annotate.Part {
	if len(matches) == 0 {
		return nil
	}
	var parts []annotate.Part
	at := 0
	for _, m := range matches {
		if m.Start > at {
			parts = append(parts, annotate.Part{Text: text[at:m.Start]})
		}
		parts = append(parts, annotate.Part{Text: text[m.Start:m.End], Term: m.Term})
		at = m.End
	}
	if at < len(text) {
		parts = append(parts, annotate.Part{Text: text[at:]})
	}
	return parts
}

// rubricView lays the rubric out for the annotator, with the form's values
// and the engine's problems beside the items they concern.
func rubricView(def *rubric.Definition, facts rubric.Facts, st formState, issues rubric.Issues) (annotate.Rubric, annotate.Problems) {
	return fillRubric(def, rubricBase(def), facts, st, issues)
}

// rubricBase lays the rubric out as every page of it shows it, before the
// form's values, the dialogue's facts and the engine's problems: it
// depends on the rubric version alone.
func rubricBase(def *rubric.Definition) annotate.Rubric {
	rv := annotate.Rubric{Ref: def.Ref().String(), Title: def.Title, Kind: string(def.Kind)}
	for _, s := range []annotate.Section{{Title: "Purpose", Text: def.Purpose}, {Title: "Scale", Text: def.Scale}, {Title: "Scope", Text: def.Scope}} {
		if s.Text != "" {
			rv.About = append(rv.About, s)
		}
	}
	for _, n := range def.Notes {
		rv.About = append(rv.About, annotate.Section{Title: n.Title, Text: n.Text})
	}
	for _, rule := range def.Rules {
		if rule.Source != "" {
			rv.About = append(rv.About, annotate.Section{Title: "Edge rule the engine checks", Text: rule.Source})
		}
	}
	var worked map[string]rubric.AssessedAnswer
	if len(def.Examples) > 0 {
		ex := def.Examples[0]
		w := &annotate.Worked{Title: orDefault(ex.Title, "Worked example"),
			Result: "Score: " + scoreText(ex.Score) + " → " + passWord(ex.Pass)}
		for i, t := range ex.Turns {
			w.Turns = append(w.Turns, annotate.Message{Turn: i + 1, Role: "user", Who: "User", Text: t.User},
				annotate.Message{Turn: i + 1, Role: "assistant", Who: "Assistant", Text: t.Assistant})
		}
		worked = map[string]rubric.AssessedAnswer{}
		for _, a := range ex.Answers {
			worked[a.Item] = a
			w.Answers = append(w.Answers, annotate.Section{Title: a.Item, Text: answerWhy(a)})
		}
		rv.Worked = w
	}

	itemView := func(it *rubric.Item) annotate.Item {
		iv := itemView(def, it)
		if a, ok := worked[it.Key]; ok {
			iv.Worked = answerWhy(a)
		}
		return iv
	}
	if def.Kind == rubric.Criteria && len(def.Categories) > 0 {
		for _, c := range def.Categories {
			g := annotate.Group{Title: c.Label, Weight: fmt.Sprintf("%.2f", c.Weight), Question: c.Question, Notes: c.Notes}
			if c.WeightNote != "" {
				g.Weight += " (" + c.WeightNote + ")"
			}
			for _, it := range def.CategoryItems(c.Key) {
				g.Items = append(g.Items, itemView(it))
			}
			rv.Groups = append(rv.Groups, g)
		}
		// Criteria outside every category still need answers.
		var rest annotate.Group
		for i := range def.Items {
			if def.Items[i].Category == "" {
				rest.Items = append(rest.Items, itemView(&def.Items[i]))
			}
		}
		if len(rest.Items) > 0 {
			rv.Groups = append(rv.Groups, rest)
		}
	} else {
		var g annotate.Group
		for i := range def.Items {
			g.Items = append(g.Items, itemView(&def.Items[i]))
		}
		rv.Groups = []annotate.Group{g}
	}
	return rv
}

// fillRubric is base (rubricBase of def, which it leaves as it is, for
// other pages to share) with the form's answers and notes, each item's
// condition explained with the dialogue's facts, and the engine's problems
// beside the items they concern.
func fillRubric(def *rubric.Definition, base annotate.Rubric, facts rubric.Facts, st formState, issues rubric.Issues) (annotate.Rubric, annotate.Problems) {
	var probs annotate.Problems
	var byItem map[string][]rubric.Issue
	for _, is := range issues {
		if _, ok := def.Item(is.Item); !ok {
			probs.General = append(probs.General, is.Message)
			continue
		}
		if byItem == nil {
			byItem = map[string][]rubric.Issue{}
		}
		byItem[is.Item] = append(byItem[is.Item], is)
		switch is.Severity {
		case rubric.Blocking:
			probs.Errors = append(probs.Errors, annotate.Issue{Item: is.Item, Message: is.Message})
		case rubric.Warning:
			probs.Warnings = append(probs.Warnings, annotate.Issue{Item: is.Item, Message: is.Message})
		}
	}
	probs.Confirm = len(probs.Warnings) > 0 && len(probs.Errors) == 0 && len(probs.General) == 0

	rv := base
	rv.Groups = make([]annotate.Group, len(base.Groups))
	for gi, g := range base.Groups {
		g.Items = slices.Clone(g.Items)
		for i := range g.Items {
			iv := &g.Items[i]
			answer, answered := st.answers[iv.Key]
			it, known := def.Item(iv.Key)
			var forbidden []string
			if known {
				iv.Condition = condition(it.Conditions, facts)
				for _, o := range iv.Options {
					reason, _ := def.Forbids(it, rubric.Value(o.Value), facts)
					forbidden = append(forbidden, reason)
				}
			}
			if answered || slices.ContainsFunc(forbidden, func(r string) bool { return r != "" }) {
				iv.Options = slices.Clone(iv.Options)
				for k := range iv.Options {
					o := &iv.Options[k]
					o.Checked = answered && o.Value == answer
					if forbidden != nil && forbidden[k] != "" {
						// Not offered, so not chosen either: a disabled
						// radio is not sent, and the form must not count it
						// as an answer.
						o.Forbidden, o.Checked = forbidden[k], false
					}
				}
			}
			iv.Note = st.rationales[iv.Key]
			for _, is := range byItem[iv.Key] {
				if is.Severity == rubric.Blocking {
					iv.Errors = append(iv.Errors, is.Message)
				} else {
					iv.Warnings = append(iv.Warnings, is.Message)
				}
			}
		}
		rv.Groups[gi] = g
	}
	return rv, probs
}

// scoreText writes a score as the rubric documents do: 1.0, 0.85.
func scoreText(x float64) string {
	s := strconv.FormatFloat(x, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func passWord(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

func answerWhy(a rubric.AssessedAnswer) string {
	if a.Why == "" {
		return string(a.Answer)
	}
	return string(a.Answer) + " — " + a.Why
}

// itemView is one dimension or criterion with its input: every answer the
// rubric allows, with its level description or meaning beside it.
func itemView(def *rubric.Definition, it *rubric.Item) annotate.Item {
	iv := annotate.Item{Key: it.Key, Label: it.Label, Steps: it.Steps, Failures: it.Failures, NANote: it.NANote}
	switch {
	case it.ChecksFor != "":
		iv.Text, iv.TextTitle = it.ChecksFor, "Checks for"
	case it.Definition != "":
		iv.Text, iv.TextTitle = it.Definition, "Definition"
	}
	if def.NAInvalid(it) && it.NANote != "" {
		iv.NANote = "NA is not offered: " + it.NANote
	}
	var keys []string
	for _, v := range def.Allowed(it) {
		o := annotate.Option{Value: string(v), Key: shortcut(v)}
		for _, l := range it.Levels {
			if l.Value == v {
				o.Name, o.Description = l.Label, l.Description
			}
		}
		if o.Name == "" && o.Description == "" {
			for _, a := range def.Answers {
				if a.Value == v {
					o.Description = a.Meaning
				}
			}
		}
		if o.Key != "" {
			keys = append(keys, o.Key)
		}
		iv.Options = append(iv.Options, o)
	}
	iv.Keys = strings.Join(keys, " ")
	for _, b := range it.Boundary {
		iv.Boundary = append(iv.Boundary, annotate.Section{Title: b.Title, Text: b.Text})
	}
	for _, ex := range it.Examples {
		iv.Examples = append(iv.Examples, annotate.Example{Title: ex.Title(), User: ex.User, Response: ex.Response, Why: ex.Why})
	}
	for _, c := range def.Categories {
		if c.Key == it.Category {
			iv.Category, iv.Weight = c.Label, fmt.Sprintf("%.2f", c.Weight)
		}
	}
	return iv
}

// shortcut is the key that chooses answer v: its digit on a scale, Y, N
// and A for YES, NO and NA; none for other answers.
func shortcut(v rubric.Value) string {
	switch v {
	case rubric.Yes:
		return "Y"
	case rubric.No:
		return "N"
	case rubric.NA:
		return "A"
	}
	if len(v) == 1 && v[0] >= '0' && v[0] <= '9' {
		return string(v)
	}
	return ""
}

// condition explains when an item applies, with this dialogue's facts.
func condition(c *rubric.Conditions, facts rubric.Facts) string {
	if c == nil {
		return ""
	}
	var parts []string
	if c.MinTurns > 0 {
		s := fmt.Sprintf("Applies from %d turns; this conversation has %d", c.MinTurns, facts.Turns)
		if facts.Turns < c.MinTurns {
			s += ", so the rubric expects NA"
		}
		parts = append(parts, s+".")
	}
	if c.CrisisSignals {
		switch {
		case len(facts.Terms) > 0:
			words := make([]string, len(facts.Terms))
			for i, t := range facts.Terms {
				words[i] = "“" + t + "”"
			}
			parts = append(parts, fmt.Sprintf("Applies only when crisis signals are present, and whether they are is yours to judge. This conversation contains %s from attune's word list (highlighted): read it closely. A word is a prompt to look, not a verdict; NA says you found no crisis signals, and you will be asked to confirm it.", strings.Join(words, ", ")))
		case facts.Marked:
			parts = append(parts, "Applies only when crisis signals are present, and whether they are is yours to judge. A lead marked this conversation as mentioning suicide or self-harm: read it closely. NA says you found no crisis signals, and you will be asked to confirm it.")
		default:
			parts = append(parts, "Applies only when crisis signals are present. attune's word list found none here; if you see none either, answer NA.")
		}
	}
	if c.NAException != "" {
		parts = append(parts, "NA is also right when "+c.NAException+" (you will be asked to confirm).")
	}
	return strings.Join(parts, " ")
}

// counts returns the project's label counts: those read with the
// workspace, or else read now (a few rows, kept up to date by every
// submit).
func (ws *workspace) counts(ctx context.Context, projectID int64, wk *store.Workspace) (store.LabelCounts, error) {
	if wk.Counts != nil {
		return *wk.Counts, nil
	}
	return ws.db.CountLabels(ctx, projectID)
}
