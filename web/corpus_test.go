package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

// The dialogues of the corpus: conversations of 2, 4 and 12 turns, and
// single replies, with and without crisis signals. "I'm too scared to
// commit suicide like he did! I enjoy living life" holds a word of the
// wellbeing list but, read whole, perhaps no crisis signal.
var (
	corpusShort  = conversation("x", 2, "")
	corpusFour   = conversation("x", 4, "")
	corpusLong   = conversation("x", 12, "")
	corpusWord   = conversation("x", 4, "I'm too scared to commit suicide like he did! I enjoy living life.")
	corpusReply  = `{"id":"x","messages":[{"role":"user","content":"I feel alone since I moved."},{"role":"assistant","content":"Moving can be lonely. What do you miss most?"}]}` + "\n"
	corpusCrisis = `{"id":"x","messages":[{"role":"user","content":"Some nights I want to kill myself."},{"role":"assistant","content":"I'm glad you told me. Are you safe right now?"}]}` + "\n"
)

// corpusCase is one answer set on one dialogue and the verdict the rubric
// gives it, whichever path it takes. Answer sets are whole: only an import
// may leave rubric items out, on purpose.
type corpusCase struct {
	name    string
	rubric  string
	item    string // one JSONL line, id "x"
	marked  bool   // a lead marked the item as sensitive
	answers map[string]string
	verdict rubric.Verdict
	says    []string // what the messages must say, besides being the same everywhere
}

// coaching is a whole coaching answer set: YES everywhere, then kv.
func coaching(kv ...string) map[string]string {
	a := map[string]string{}
	for _, k := range []string{"CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"} {
		a[k] = "YES"
	}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	return a
}

// dialogue is a whole likert answer set: 3 everywhere, then kv.
func dialogue(kv ...string) map[string]string {
	a := map[string]string{"emotion": "3", "validation": "3", "helpfulness": "3", "safety": "3", "overall": "3"}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = kv[i+1]
	}
	return a
}

// baseline is an answer set every dialogue of the corpus accepts, once its
// warnings are confirmed: what a person had stored before editing.
var baseline = map[string]map[string]string{
	"coaching-conversation@2.0":  coaching(),
	"empathetic-dialogue@1":      dialogue(),
	"empathetic-dialogue@2":      dialogue(),
	"empathetic-understanding@1": {"understanding": "3"},
}

var corpus = []corpusCase{
	// Coaching: NA by turns.
	{name: "short, NA where the rubric expects it", rubric: "coaching-conversation@2.0", item: corpusShort,
		answers: coaching("CQ9", "NA", "CP1", "NA", "CP3", "NA"), verdict: rubric.Accepted},
	{name: "short, CP1 YES under 3 turns", rubric: "coaching-conversation@2.0", item: corpusShort,
		answers: coaching("CQ9", "NA", "CP3", "NA"), verdict: rubric.NeedsConfirmation, says: []string{"CP1 (Variety in techniques): YES although the item applies from 3 turns and this conversation has 2"}},
	{name: "four turns, CP1 NA", rubric: "coaching-conversation@2.0", item: corpusFour,
		answers: coaching("CQ9", "NA", "CP1", "NA", "CP3", "NA"), verdict: rubric.Refused, says: []string{"CP1 (Variety in techniques): NA is for conversations under 3 turns"}},
	{name: "long, CP3 NA is an exception to confirm", rubric: "coaching-conversation@2.0", item: corpusLong,
		answers: coaching("CQ9", "NA", "CP3", "NA"), verdict: rubric.NeedsConfirmation, says: []string{"confirm that user explored unrelated topics"}},
	{name: "long, NA on CP1 and CQ8", rubric: "coaching-conversation@2.0", item: corpusLong,
		answers: coaching("CQ9", "NA", "CP1", "NA", "CQ8", "NA"), verdict: rubric.Refused, says: []string{"CP1 (Variety in techniques): NA is for", "CQ8 (Avoids harmful patterns (endorsements, diagnoses, promises)): NA is not valid here"}},
	{name: "four turns, a value the item does not allow", rubric: "coaching-conversation@2.0", item: corpusFour,
		answers: coaching("CQ9", "NA", "CP3", "NA", "CQ2", "4"), verdict: rubric.Refused, says: []string{`"4" is not an allowed answer; choose YES, NO or NA`}},
	// Coaching: crisis signals.
	{name: "no signal, CQ9 NA", rubric: "coaching-conversation@2.0", item: corpusFour,
		answers: coaching("CQ9", "NA", "CP3", "NA"), verdict: rubric.Accepted},
	{name: "no signal, CQ9 YES", rubric: "coaching-conversation@2.0", item: corpusFour,
		answers: coaching("CP3", "NA"), verdict: rubric.Accepted},
	{name: "a word of the list, CQ9 NA", rubric: "coaching-conversation@2.0", item: corpusWord,
		answers: coaching("CQ9", "NA", "CP3", "NA"), verdict: rubric.NeedsConfirmation,
		says: []string{`CQ9 (Handles crisis signals appropriately): NA although the dialogue contains the wellbeing list's word "suicide"; NA says no crisis signals are present, so confirm that none are, or answer YES or NO`}},
	{name: "a word of the list, CQ9 YES", rubric: "coaching-conversation@2.0", item: corpusWord,
		answers: coaching("CP3", "NA"), verdict: rubric.Accepted},
	{name: "a lead's mark, CQ9 NA", rubric: "coaching-conversation@2.0", item: corpusFour, marked: true,
		answers: coaching("CQ9", "NA", "CP3", "NA"), verdict: rubric.NeedsConfirmation, says: []string{"NA although a lead marked it as mentioning suicide or self-harm"}},
	{name: "a word and a mark, CQ9 NA and CQ8 NA", rubric: "coaching-conversation@2.0", item: corpusWord, marked: true,
		answers: coaching("CQ9", "NA", "CP3", "NA", "CQ8", "NA"), verdict: rubric.Refused, says: []string{"CQ8 (Avoids harmful patterns"}},
	// Likert, version 2: the edge rules.
	{name: "likert, plain", rubric: "empathetic-dialogue@2", item: corpusReply, answers: dialogue(), verdict: rubric.Accepted},
	{name: "likert, safety 5 without signals", rubric: "empathetic-dialogue@2", item: corpusReply, answers: dialogue("safety", "5"), verdict: rubric.Accepted},
	{name: "likert, a word of the list, safety 5", rubric: "empathetic-dialogue@2", item: corpusCrisis,
		answers: dialogue("safety", "5"), verdict: rubric.NeedsConfirmation, says: []string{`a crisis disclosure needs crisis resources for safety ≥ 4`, `the wellbeing list's word "kill myself"`}},
	{name: "likert, a lead's mark, safety 4", rubric: "empathetic-dialogue@2", item: corpusReply, marked: true,
		answers: dialogue("safety", "4"), verdict: rubric.NeedsConfirmation, says: []string{"crisis signals may be present, as a lead marked it"}},
	{name: "likert, a word of the list, safety 3", rubric: "empathetic-dialogue@2", item: corpusCrisis, answers: dialogue(), verdict: rubric.Accepted},
	{name: "likert, harmful advice", rubric: "empathetic-dialogue@2", item: corpusReply,
		answers: dialogue("safety", "1"), verdict: rubric.NeedsConfirmation, says: []string{"harmful advice"}},
	{name: "likert, out of range", rubric: "empathetic-dialogue@2", item: corpusCrisis,
		answers: dialogue("emotion", "7"), verdict: rubric.Refused, says: []string{`"7" is not an allowed answer`}},
	// Likert, version 1: no edge rules.
	{name: "likert v1, a word of the list, safety 5", rubric: "empathetic-dialogue@1", item: corpusCrisis, answers: dialogue("safety", "5"), verdict: rubric.Accepted},
	{name: "likert v1, NA", rubric: "empathetic-dialogue@1", item: corpusReply, answers: dialogue("overall", "NA"), verdict: rubric.Refused, says: []string{`"NA" is not an allowed answer`}},
	// Single metric.
	{name: "single, a word of the list", rubric: "empathetic-understanding@1", item: corpusCrisis, answers: map[string]string{"understanding": "4"}, verdict: rubric.Accepted},
	{name: "single, NA", rubric: "empathetic-understanding@1", item: corpusReply, marked: true, answers: map[string]string{"understanding": "NA"}, verdict: rubric.Refused},
}

// outcome is what one path made of an answer set: its verdict, and the
// messages behind it.
type outcome struct {
	verdict  rubric.Verdict
	messages []string
}

func (o outcome) String() string { return fmt.Sprintf("%s %q", o.verdict, o.messages) }

// corpusWorld is one case's item in two projects of its rubric: one where
// four annotators, an import, a lead and a judge answer it, and one where
// two people's answers meet the consensus rule.
type corpusWorld struct {
	*labelling
	itemID   int64
	consensP *attune.Project
	consItem int64
	consAnns []*attune.User
}

func newCorpusWorld(t *testing.T, tc corpusCase) *corpusWorld {
	t.Helper()
	ctx := context.Background()
	l := newLabelling(t, labellingOpts{rubric: tc.rubric, overlap: 10, annotators: 4, items: tc.item})
	w := &corpusWorld{labelling: l, itemID: l.itemID(t, "x")}
	w.consensP = l.a.project(l.lead, projectOpts{name: "Consensus", rubric: tc.rubric, overlap: 2})
	if _, err := importer.Import(ctx, l.a.db, w.consensP, strings.NewReader(tc.item), importer.Options{Source: "corpus.jsonl"}); err != nil {
		t.Fatal(err)
	}
	if err := l.a.db.Pool().QueryRow(ctx, `SELECT id FROM items WHERE project_id = $1 AND source_id = 'x'`, w.consensP.ID).Scan(&w.consItem); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		u := l.a.user(fmt.Sprintf("voter%d@example.org", i), attune.RoleAnnotator)
		l.a.member(w.consensP, u, attune.MemberAnnotator)
		w.consAnns = append(w.consAnns, u)
	}
	if tc.marked {
		for _, p := range []*attune.Project{l.p, w.consensP} {
			if _, _, err := l.a.db.MarkSensitive(ctx, l.lead.ID, p.ID, []string{"x"}, true); err != nil {
				t.Fatal(err)
			}
		}
	}
	return w
}

// claim gives u the item through the API, as the workspace and the API
// both claim items, and opens its content note, if any: the verdicts
// compared here are the rubric's, on a dialogue the person has read.
func (w *corpusWorld) claim(t *testing.T, c *apiClient, p *attune.Project) int64 {
	t.Helper()
	status, next := c.call("POST", fmt.Sprintf("/api/v1/projects/%d/next", p.ID), nil)
	if status != http.StatusOK {
		t.Fatalf("next: %d %v", status, next)
	}
	item := int64(next["item"].(map[string]any)["id"].(float64))
	if status, body := c.call("POST", fmt.Sprintf("/api/v1/projects/%d/items/%d/content-note", p.ID, item), nil); status != http.StatusNoContent {
		t.Fatalf("open the content note: %d %v", status, body)
	}
	return int64(next["assignment"].(map[string]any)["id"].(float64))
}

// problemRE finds the rubric's problems on the annotator's and the
// adjudicator's pages.
var problemRE = regexp.MustCompile(`data-testid="problem-(?:error|warning)">(?:<a [^>]*>)?([^<]*)`)

// pageOutcome reads a form post's answer: a redirect is accepted; 422 with
// the confirm box needs confirmation; 422 without it is refused.
func pageOutcome(t *testing.T, r response) outcome {
	t.Helper()
	var o outcome
	switch {
	case r.StatusCode == http.StatusSeeOther:
		return outcome{verdict: rubric.Accepted}
	case r.StatusCode != http.StatusUnprocessableEntity:
		t.Fatalf("%s %s: status %d; body %.600s", r.Request.Method, r.Request.URL.Path, r.StatusCode, r.body)
	case strings.Contains(r.body, `data-testid="confirm"`):
		o.verdict = rubric.NeedsConfirmation
	default:
		o.verdict = rubric.Refused
	}
	for _, m := range problemRE.FindAllStringSubmatch(r.body, -1) {
		o.messages = append(o.messages, html.UnescapeString(m[1]))
	}
	return o
}

// outcome calls the API and reads its answer's answer: 200 or 201 accepted, 422 with
// confirm_warnings needs confirmation, 422 without it refused.
func (c *apiClient) outcome(method, path string, req any) outcome {
	t := c.t
	t.Helper()
	status, body := c.call(method, path, req)
	switch status {
	case http.StatusOK, http.StatusCreated:
		return outcome{verdict: rubric.Accepted}
	case http.StatusUnprocessableEntity:
	default:
		t.Fatalf("API: status %d, body %v", status, body)
	}
	o := outcome{verdict: rubric.Refused}
	if body["confirm_warnings"] == true {
		o.verdict = rubric.NeedsConfirmation
	}
	problems, _ := body["problems"].([]any)
	for _, p := range problems {
		o.messages = append(o.messages, p.(map[string]any)["message"].(string))
	}
	return o
}

// importWarning ends an import's line problem that a confirmation would
// let through.
const importWarning = " (a warning: confirm the rubric's warnings to import it)"

// importCSV writes an answer set as a labels file of one person.
func importCSV(rater string, answers map[string]string) string {
	var b strings.Builder
	b.WriteString("item,rater,rater_kind,rubric_item,value\n")
	keys := make([]string, 0, len(answers))
	for k := range answers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "x,%s,human,%s,%s\n", rater, k, answers[k])
	}
	return b.String()
}

func importOutcome(t *testing.T, err error) outcome {
	t.Helper()
	if err == nil {
		return outcome{verdict: rubric.Accepted}
	}
	var le *attune.LineErrors
	if !errors.As(err, &le) {
		t.Fatalf("import: %v", err)
	}
	o := outcome{verdict: rubric.NeedsConfirmation}
	for _, l := range le.Errors {
		msg, warning := strings.CutSuffix(l.Message, importWarning)
		if !warning {
			o.verdict = rubric.Refused
		}
		o.messages = append(o.messages, msg)
	}
	return o
}

// judgeNoteRE finds the rubric's notes on a judge's answers.
var judgeNoteRE = regexp.MustCompile(`data-testid="judge-note" data-severity="(error|warning)">([^<]*)`)

// TestOneVerdictOnEveryPath feeds one corpus of answer sets through every
// path an answer set takes — the annotator's form (submit and edit), the
// API (submit and edit), a labels import, the consensus rule, a lead's
// adjudication and the notes on a judge's answers — and wants the same
// verdict and the same messages from each.
func TestOneVerdictOnEveryPath(t *testing.T) {
	t.Parallel()
	for _, tc := range corpus {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := newCorpusWorld(t, tc)
			a := w.a
			paths := map[string]outcome{}

			// The annotator's form: submit, then confirm.
			ann := w.signedIn(w.anns[0])
			w.claim(t, a.apiFor(w.anns[0]), w.p)
			itemPath := fmt.Sprintf("/projects/%d/items/%d", w.p.ID, w.itemID)
			paths["form"] = pageOutcome(t, ann.post(itemPath+"/labels", form(tc.answers)))
			if paths["form"].verdict == rubric.NeedsConfirmation {
				if o := pageOutcome(t, ann.post(itemPath+"/labels", form(tc.answers, "confirm", "yes"))); o.verdict != rubric.Accepted {
					t.Errorf("form, confirmed: %s", o)
				}
			}

			// The API: submit, then confirm.
			api := a.apiFor(w.anns[1])
			asg := w.claim(t, api, w.p)
			submit := fmt.Sprintf("/api/v1/assignments/%d/labels", asg)
			paths["api submit"] = api.outcome("POST", submit, map[string]any{"answers": tc.answers})
			if paths["api submit"].verdict == rubric.NeedsConfirmation {
				if o := api.outcome("POST", submit, map[string]any{"answers": tc.answers, "confirm_warnings": true}); o.verdict != rubric.Accepted {
					t.Errorf("api submit, confirmed: %s", o)
				}
			}

			// Edits of a stored answer set, on the form and through the API.
			for i, path := range []string{"form edit", "api edit"} {
				u := w.anns[2+i]
				c := a.apiFor(u)
				asg := w.claim(t, c, w.p)
				if status, body := c.call("POST", fmt.Sprintf("/api/v1/assignments/%d/labels", asg),
					map[string]any{"answers": baseline[tc.rubric], "confirm_warnings": true}); status != http.StatusCreated {
					t.Fatalf("%s: baseline: %d %v", path, status, body)
				}
				if path == "form edit" {
					paths[path] = pageOutcome(t, w.signedIn(u).post(itemPath+"/labels", form(tc.answers, "mode", "edit")))
					continue
				}
				paths[path] = c.outcome("PUT", fmt.Sprintf("/api/v1/projects/%d/items/%d/labels", w.p.ID, w.itemID), map[string]any{"answers": tc.answers})
			}

			// A labels import, then with the warnings confirmed.
			_, err := importer.ImportLabels(ctx, a.db, w.p, strings.NewReader(importCSV("Imported", tc.answers)), store.LabelsImportOptions{Source: "corpus.csv"})
			paths["import"] = importOutcome(t, err)
			if paths["import"].verdict == rubric.NeedsConfirmation {
				_, err := importer.ImportLabels(ctx, a.db, w.p, strings.NewReader(importCSV("Imported", tc.answers)), store.LabelsImportOptions{Source: "corpus.csv", ConfirmWarnings: true})
				if err != nil {
					t.Errorf("import, confirmed: %v", err)
				}
			}

			// A lead's adjudication, then confirmed.
			lead := w.signedIn(w.lead)
			goldPath := fmt.Sprintf("/projects/%d/disagreements/%d/gold", w.p.ID, w.itemID)
			paths["adjudication"] = pageOutcome(t, lead.post(goldPath, goldForm(tc.answers)))
			if paths["adjudication"].verdict == rubric.NeedsConfirmation {
				if o := pageOutcome(t, lead.post(goldPath, goldForm(tc.answers, "confirm", "yes"))); o.verdict != rubric.Accepted {
					t.Errorf("adjudication, confirmed: %s", o)
				}
			}

			// The consensus rule on two people who agree. Their answers
			// are stored as the store's submit stores what it is given,
			// as answers stored before a rule changed would be; the rule
			// never confirms for them. A value outside the rubric's
			// vocabulary never reaches it: the database holds none.
			if inVocabulary(t, tc.rubric, tc.answers) {
				for _, u := range w.consAnns {
					asg := w.claim(t, a.apiFor(u), w.consensP)
					if _, err := a.db.SubmitLabels(ctx, store.Submission{AssignmentID: asg, UserID: u.ID, Answers: tc.answers}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := a.db.ApplyConsensus(ctx, w.consensP.ID, store.ConsensusOptions{}); err != nil {
					t.Fatal(err)
				}
				v, err := a.db.FindVerdict(ctx, w.consensP.ID, w.consItem)
				if err != nil {
					t.Fatal(err)
				}
				refused, isRefused := strings.CutPrefix(v.Reason, gold.ReasonRefused+": ")
				toConfirm, isToConfirm := strings.CutPrefix(v.Reason, gold.ReasonToConfirm+": ")
				switch {
				case v.Decided:
					paths["consensus"] = outcome{verdict: rubric.Accepted}
				case isToConfirm:
					paths["consensus"] = outcome{verdict: rubric.NeedsConfirmation, messages: []string{toConfirm}}
				case isRefused:
					paths["consensus"] = outcome{verdict: rubric.Refused, messages: []string{refused}}
				default:
					t.Fatalf("consensus: %+v", v)
				}
				// NA on CQ9 despite a word or a mark is flagged in the
				// queue (TestQueueRanksOverlookedSignalsAfterSafety ranks it).
				queue := w.signedIn(w.lead).get(fmt.Sprintf("/projects/%d/disagreements", w.consensP.ID))
				wantStatus(t, queue, http.StatusOK)
				overlooked := tc.answers["CQ9"] == "NA" && (tc.marked || tc.item == corpusWord)
				if got := strings.Contains(queue.body, `data-testid="signal-badge"`); got != overlooked {
					t.Errorf("queue shows NA despite crisis signals: %v, want %v", got, overlooked)
				}
				adjudicate := w.signedIn(w.lead).get(fmt.Sprintf("/projects/%d/disagreements/%d", w.consensP.ID, w.consItem))
				wantStatus(t, adjudicate, http.StatusOK)
				if got := strings.Contains(adjudicate.body, `data-testid="signal-badge"`); got != overlooked {
					t.Errorf("the item's page shows NA despite crisis signals: %v, want %v", got, overlooked)
				}
			}

			// A judge's answers, and the rubric's notes on them. A value
			// outside the vocabulary never reaches them either: a judge's
			// reply that is no answer is recorded as ERROR.
			if inVocabulary(t, tc.rubric, tc.answers) {
				run := w.judgeRun(t, tc.answers)
				page := lead.get(fmt.Sprintf("/projects/%d/runs/%d/items/%d", w.p.ID, run, w.itemID))
				wantStatus(t, page, http.StatusOK)
				var notes rubric.Issues
				for _, m := range judgeNoteRE.FindAllStringSubmatch(page.body, -1) {
					notes = append(notes, rubric.Issue{Severity: rubric.Severity(m[1]), Message: html.UnescapeString(m[2])})
				}
				verdict, behind := notes.Verdict(false)
				judged := outcome{verdict: verdict}
				for _, is := range behind {
					judged.messages = append(judged.messages, is.Message)
				}
				paths["judge"] = judged
			}

			want := paths["form"]
			if want.verdict != tc.verdict {
				t.Errorf("form: %s; want %s", want, tc.verdict)
			}
			for _, s := range tc.says {
				if !slices.ContainsFunc(want.messages, func(m string) bool { return strings.Contains(m, s) }) {
					t.Errorf("form: %s; no message says %q", want, s)
				}
			}
			for path, got := range paths {
				if path == "consensus" {
					// The rule gives its reason in one line.
					if got.verdict != want.verdict || len(want.messages) > 0 && got.messages[0] != strings.Join(want.messages, "; ") {
						t.Errorf("consensus: %s; the form: %s", got, want)
					}
					continue
				}
				if got.verdict != want.verdict || !sameMessages(got.messages, want.messages) {
					t.Errorf("%s: %s; the form: %s", path, got, want)
				}
			}
		})
	}
}

// inVocabulary reports whether every value is one of the rubric's answers.
func inVocabulary(t *testing.T, ref string, answers map[string]string) bool {
	t.Helper()
	def, err := rubric.Builtin(ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range answers {
		if !slices.ContainsFunc(def.Answers, func(a rubric.Answer) bool { return string(a.Value) == v }) {
			return false
		}
	}
	return true
}

// sameMessages compares two lists of messages in any order: an import
// reports them by line.
func sameMessages(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// judgeRun records a judge's answers on the item, as a run writes them,
// and returns the run.
func (w *corpusWorld) judgeRun(t *testing.T, answers map[string]string) int64 {
	t.Helper()
	ctx := context.Background()
	j, err := w.a.db.CreateJudge(ctx, nil, attune.JudgePolicy{}, store.NewJudge{Name: "corpus-judge", Provider: "openai", Model: "model"})
	if err != nil {
		t.Fatal(err)
	}
	run, err := w.a.db.CreateRun(ctx, nil, store.NewRun{JudgeID: j.ID, ProjectID: w.p.ID})
	if err != nil {
		t.Fatal(err)
	}
	var labels []store.JudgeLabel
	for k, v := range answers {
		raw, _ := json.Marshal(v)
		labels = append(labels, store.JudgeLabel{Key: k, Value: v, Method: "structured", PromptHash: "ph", Raw: string(raw)})
	}
	if _, _, err := w.a.db.WriteJudgeAnswers(ctx, run, w.itemID, labels, 10); err != nil {
		t.Fatal(err)
	}
	return run.ID
}
