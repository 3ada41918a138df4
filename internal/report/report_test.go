package report_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/dbtest"
	"github.com/attune/attune/internal/importer"
	"github.com/attune/attune/internal/report"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
	"github.com/attune/attune/internal/store"
)

func TestMain(m *testing.M) { os.Exit(dbtest.Main(m)) }

// label is one row of a labels file: the fixtures are written the way a
// team would bring them in, and the same rows feed the direct computations
// the report is checked against.
type label struct {
	item, rater, kind, key, value string
}

// fixture is a project with items item-000…, labelled by the rows.
type fixture struct {
	db      *store.DB
	project *attune.Project
	def     *rubric.Definition
	rows    []label
	raterID map[string]int64
}

func newFixture(t *testing.T, ref string, items int, rows []label) *fixture {
	t.Helper()
	ctx := context.Background()
	db := dbtest.New(t)
	if err := db.LoadBuiltinRubrics(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := rubric.ParseRef(ref)
	def, rv, err := db.FindRubric(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.CreateProject(ctx, nil, store.NewProject{Name: "p-" + t.Name(), RubricVersionID: rv.ID, Overlap: 3, Lease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ImportItems(ctx, p.ID, store.ImportOptions{}, func(emit func([]store.ImportItem) error) error {
		var batch []store.ImportItem
		for i := range items {
			msgs, _ := json.Marshal([]attune.Message{{Role: "user", Content: fmt.Sprintf("I feel low %d", i)}, {Role: "assistant", Content: "That sounds hard."}})
			batch = append(batch, store.ImportItem{Line: i + 1, SourceID: fmt.Sprintf("item-%03d", i), Kind: "reply", Messages: msgs,
				Meta: []byte(`{}`), Turns: 1, SHA256: fmt.Sprintf("%064x", i+1)})
		}
		return emit(batch)
	})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	w.Write([]string{"item", "rater", "rater_kind", "rubric_item", "value"})
	for _, l := range rows {
		w.Write([]string{l.item, l.rater, l.kind, l.key, l.value})
	}
	w.Flush()
	// Random labels trip the rubric's warnings (harmful advice scored
	// high on helpfulness, an answer where NA is expected); the figures
	// are about agreement, so the fixture confirms them as a lead would.
	if _, err := importer.ImportLabels(ctx, db, p, &b, store.LabelsImportOptions{Source: "fixture.csv", ConfirmWarnings: true}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{db: db, project: p, def: def, rows: rows, raterID: map[string]int64{}}
	raters, err := db.ListProjectRaters(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range raters {
		f.raterID[pr.Name] = pr.ID
	}
	return f
}

func (f *fixture) build(t *testing.T, opts report.Options) *report.Report {
	t.Helper()
	if opts.Alt.Epsilon == 0 {
		// ε has no zero default: a caller that takes it from a person
		// starts from DefaultEpsilon, as the page and the CLI do.
		opts.Alt.Epsilon = report.DefaultEpsilon
	}
	r, err := report.Build(context.Background(), f.db, f.project, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// ratings gathers the rows of one rubric item by the raters kept, the
// triples agreement.Summarize reads; skip drops values treated as missing.
func (f *fixture) ratings(t *testing.T, key string, keep func(label) bool, skip ...string) *agreement.Ratings {
	t.Helper()
	r := agreement.NewRatings()
	for _, l := range f.rows {
		if l.key != key || !keep(l) || slices.Contains(skip, l.value) {
			continue
		}
		if err := r.Add(l.item, l.rater, l.value); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

func humans(l label) bool { return l.kind == "human" }

// randomRows labels items on a Likert rubric: people near a per-item truth,
// some leaving items out, judges noisier and now and then failing (ERROR).
func randomRows(items int, people, judges []string, keys []string, seed uint64) []label {
	rng := rand.New(rand.NewPCG(seed, 7))
	var rows []label
	for i := range items {
		item := fmt.Sprintf("item-%03d", i)
		for _, k := range keys {
			truth := 1 + rng.IntN(5)
			for j, p := range people {
				if rng.IntN(10) == 0 {
					continue // not labelled
				}
				v := max(1, min(5, truth+rng.IntN(3)-1+j%2))
				rows = append(rows, label{item, p, "human", k, fmt.Sprint(v)})
			}
			for _, jn := range judges {
				v := fmt.Sprint(max(1, min(5, truth+rng.IntN(5)-2)))
				if rng.IntN(15) == 0 {
					v = "ERROR"
				}
				rows = append(rows, label{item, jn, "judge", k, v})
			}
		}
	}
	return rows
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func wantStat(t *testing.T, what string, got report.Stat, want agreement.Estimate) {
	t.Helper()
	switch {
	case !want.Defined && got.Value != nil:
		t.Errorf("%s = %v, want undefined (%s)", what, *got.Value, want.Reason)
	case want.Defined && got.Value == nil:
		t.Errorf("%s undefined (%s), want %v", what, got.Reason, want.Value)
	case want.Defined && !near(*got.Value, want.Value):
		t.Errorf("%s = %v, want %v", what, *got.Value, want.Value)
	}
}

var likertKeys = []string{"emotion", "validation", "helpfulness", "safety", "overall"}

// TestReportMatchesDirectComputation checks every count the report folds
// from the stream against a direct count over the same labels, and every
// figure against agreement.Summarize over the same triples.
func TestReportMatchesDirectComputation(t *testing.T) {
	t.Parallel()
	people, judgeNames := []string{"ann", "bo", "cy", "di"}, []string{"gpt", "claude"}
	f := newFixture(t, "empathetic-dialogue@2", 40, randomRows(40, people, judgeNames, likertKeys, 1))
	r := f.build(t, report.Options{})
	scale, _ := agreement.ParseScale("1,2,3,4,5")
	opts := agreement.Options{Scale: scale, Level: agreement.Ordinal, Weights: agreement.QuadraticWeights}
	if len(r.Raters) != 6 || r.Raters[0].Kind != "human" || r.Raters[5].Kind != "judge" || !r.Raters[0].Imported {
		t.Fatalf("raters = %+v", r.Raters)
	}
	name := map[int64]string{}
	for n, id := range f.raterID {
		name[id] = n
	}
	for _, it := range r.RubricItems {
		key := it.Key
		s, err := agreement.Summarize(f.ratings(t, key, humans), opts)
		if err != nil {
			t.Fatal(err)
		}
		if it.Items != s.Items || it.Raters != 4 {
			t.Errorf("%s: %d items and %d raters, want %d and 4", key, it.Items, it.Raters, s.Items)
		}
		st := it.Statistics
		wantStat(t, key+" percent agreement", st.PercentAgreement, s.PercentAgreement)
		wantStat(t, key+" alpha", st.KrippendorffAlpha, s.KrippendorffAlpha)
		wantStat(t, key+" Fleiss", st.FleissKappa, s.FleissKappa)
		wantStat(t, key+" AC1", st.GwetAC1, s.GwetAC1)
		wantStat(t, key+" AC2", st.GwetAC2, s.GwetAC2)
		errs := 0
		for _, l := range f.rows {
			if l.key == key && l.value == "ERROR" {
				errs++
			}
		}
		if it.Missing.Errors != errs {
			t.Errorf("%s: %d ERROR left out, want %d", key, it.Missing.Errors, errs)
		}
		if len(it.Pairs) != 15 {
			t.Fatalf("%s: %d pairs, want 15", key, len(it.Pairs))
		}
		all := f.ratings(t, key, func(label) bool { return true }, "ERROR")
		for _, p := range it.Pairs {
			c, err := all.Pair(scale, name[p.A], name[p.B])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(c.Counts(), p.Confusion, slices.Equal) {
				t.Errorf("%s %s×%s: confusion %v, want %v", key, name[p.A], name[p.B], p.Confusion, c.Counts())
			}
			wantStat(t, key+" pair kappa", p.CohenKappa, agreement.CohenKappa(c, agreement.QuadraticWeights))
			wantStat(t, key+" pair agreement", p.Agreement, agreement.PairAgreement(c, agreement.NoWeights))
			wantStat(t, key+" pair spearman", *p.Spearman, agreement.Spearman(c))
		}
		for _, a := range it.Annotators {
			// Leniency and agreement, directly: over every other
			// annotator of each item this one labelled.
			var off float64
			var n, agree int
			vals := map[string]map[string]int{}
			for _, l := range f.rows {
				if l.key == key && l.kind == "human" {
					if vals[l.item] == nil {
						vals[l.item] = map[string]int{}
					}
					var v int
					fmt.Sscan(l.value, &v)
					vals[l.item][l.rater] = v
				}
			}
			me := name[a.Rater]
			for _, byRater := range vals {
				mine, ok := byRater[me]
				if !ok {
					continue
				}
				for other, v := range byRater {
					if other == me {
						continue
					}
					n++
					off += float64(mine - v)
					if mine == v {
						agree++
					}
				}
			}
			if !near(*a.Leniency.Value, off/float64(n)) || !near(*a.Agreement.Value, float64(agree)/float64(n)) {
				t.Errorf("%s %s: leniency %v agreement %v, want %v and %v", key, me, *a.Leniency.Value, *a.Agreement.Value, off/float64(n), float64(agree)/float64(n))
			}
		}
		for _, j := range it.Judges {
			jn := name[j.Rater]
			with, err := agreement.Summarize(f.ratings(t, key, func(l label) bool { return l.kind == "human" || l.rater == jn }, "ERROR"), opts)
			if err != nil {
				t.Fatal(err)
			}
			wantStat(t, key+" alpha with "+jn, j.AlphaWithJudge, with.KrippendorffAlpha)
			wantStat(t, key+" alpha without", j.Alpha, s.KrippendorffAlpha)
			// The consensus, directly: the lower median of the people.
			cons := agreement.NewRatings()
			byItem := map[string][]int{}
			judged := map[string]string{}
			for _, l := range f.rows {
				if l.key != key {
					continue
				}
				if l.kind == "human" {
					var v int
					fmt.Sscan(l.value, &v)
					byItem[l.item] = append(byItem[l.item], v)
				} else if l.rater == jn && l.value != "ERROR" {
					judged[l.item] = l.value
				}
			}
			for item, vs := range byItem {
				if len(vs) < 2 || judged[item] == "" {
					continue
				}
				slices.Sort(vs)
				cons.Add(item, "judge", judged[item])
				cons.Add(item, "consensus", fmt.Sprint(vs[(len(vs)-1)/2]))
			}
			c, err := cons.Pair(scale, "judge", "consensus")
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(c.Counts(), j.Consensus.Confusion, slices.Equal) {
				t.Errorf("%s %s: consensus table %v, want %v", key, jn, j.Consensus.Confusion, c.Counts())
			}
			wantStat(t, key+" consensus kappa", j.Consensus.CohenKappa, agreement.CohenKappa(c, agreement.QuadraticWeights))
			if j.Verdict == "" || j.AnnotatorKappaMin == nil {
				t.Errorf("%s %s: no verdict or human range: %+v", key, jn, j)
			}
		}
	}
	// Likert scores are the overall as given: their rank agreement is the
	// overall's, over complete answer sets.
	if r.Engine.Pass != nil || r.Engine.SafetyGate != nil {
		t.Error("pass and safety gate on a Likert rubric")
	}
	if r.Engine.Scored+r.Engine.Incomplete != 40*6 {
		t.Errorf("engine saw %d + %d answer sets, want %d", r.Engine.Scored, r.Engine.Incomplete, 40*6)
	}
	if len(r.Engine.Score.Pairs) == 0 || r.Engine.Score.Pairs[0].Spearman.Value == nil {
		t.Errorf("no final-score rank agreement: %+v", r.Engine.Score)
	}
}

var criteriaKeys = []string{"CQ1", "CQ2", "CQ3", "CQ4", "CQ5", "CQ6", "CQ7", "CQ8", "CQ9", "CP1", "CP2", "CP3"}

// criteriaRows answers every criterion for every item, mostly YES.
func criteriaRows(items int, people, judges []string, seed uint64) []label {
	rng := rand.New(rand.NewPCG(seed, 9))
	pick := func(k string) string {
		switch x := rng.IntN(10); {
		case x < 7:
			return "YES"
		case x < 9 || k == "CQ8" || k == "CP2": // NA is not valid there
			return "NO"
		}
		return "NA"
	}
	var rows []label
	for i := range items {
		item := fmt.Sprintf("item-%03d", i)
		for _, k := range criteriaKeys {
			truth := pick(k)
			for _, p := range people {
				v := truth
				if rng.IntN(5) == 0 {
					v = pick(k)
				}
				rows = append(rows, label{item, p, "human", k, v})
			}
			for _, j := range judges {
				v := truth
				if rng.IntN(3) == 0 {
					v = pick(k)
				}
				rows = append(rows, label{item, j, "judge", k, v})
			}
		}
	}
	return rows
}

// TestNAAsMissingAndEngine checks that NA as missing changes the counts as
// dropping NA from the triples would, and that pass and safety gate agree
// with the engine's scores computed directly.
func TestNAAsMissingAndEngine(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "coaching-conversation@2.0", 30, criteriaRows(30, []string{"ann", "bo", "cy"}, []string{"judge-a"}, 3))
	withNA := f.build(t, report.Options{})
	without := f.build(t, report.Options{NAMissing: true})
	if withNA.NA != "category" || without.NA != "missing" || !strings.Contains(without.NANote, "missing") {
		t.Fatalf("NA treatment: %q, %q", withNA.NA, without.NA)
	}
	yesNo, _ := agreement.NewScale("YES", "NO")
	all, _ := agreement.NewScale("YES", "NO", "NA")
	for k, key := range criteriaKeys {
		a, b := withNA.RubricItems[k], without.RubricItems[k]
		// A criterion's scale is the answers it allows: CQ8 and CP2 have
		// no NA, so NA as missing changes nothing there.
		withScale, wantA := all, []string{"YES", "NO", "NA"}
		if key == "CQ8" || key == "CP2" {
			withScale, wantA = yesNo, []string{"YES", "NO"}
		}
		if !slices.Equal(a.Scale, wantA) || !slices.Equal(b.Scale, []string{"YES", "NO"}) || a.Level != "nominal" {
			t.Fatalf("%s scales %v and %v", key, a.Scale, b.Scale)
		}
		nas := 0
		for _, l := range f.rows {
			if l.key == key && l.value == "NA" {
				nas++
			}
		}
		if b.Missing.NA != nas || a.Missing.NA != 0 {
			t.Errorf("%s: %d and %d NA left out, want 0 and %d", key, a.Missing.NA, b.Missing.NA, nas)
		}
		for _, c := range []struct {
			got   report.RubricItem
			scale *agreement.Scale
			skip  []string
		}{{a, withScale, nil}, {b, yesNo, []string{"NA"}}} {
			s, err := agreement.Summarize(f.ratings(t, key, humans, c.skip...), agreement.Options{Scale: c.scale})
			if err != nil {
				t.Fatal(err)
			}
			wantStat(t, key+" alpha", c.got.Statistics.KrippendorffAlpha, s.KrippendorffAlpha)
			wantStat(t, key+" AC1", c.got.Statistics.GwetAC1, s.GwetAC1)
			wantStat(t, key+" percent", c.got.Statistics.PercentAgreement, s.PercentAgreement)
		}
	}
	// The engine's pass and gate, scored directly from the rows.
	sets := map[[2]string]rubric.Answers{}
	for _, l := range f.rows {
		k := [2]string{l.item, l.rater}
		if sets[k] == nil {
			sets[k] = rubric.Answers{}
		}
		sets[k][l.key] = rubric.Value(l.value)
	}
	pass := agreement.NewRatings()
	gate := agreement.NewRatings()
	for k, a := range sets {
		res, err := scoring.Score(f.def, a, rubric.Facts{})
		if err != nil {
			t.Fatal(err)
		}
		p, g := "pass", "passed"
		if !*res.Pass {
			p = "fail"
		}
		if res.SafetyGateFailed {
			g = "failed"
		}
		if k[1] != "judge-a" {
			pass.Add(k[0], k[1], p)
			gate.Add(k[0], k[1], g)
		}
	}
	ps, _ := agreement.NewScale("pass", "fail")
	gs, _ := agreement.NewScale("passed", "failed")
	sp, _ := agreement.Summarize(pass, agreement.Options{Scale: ps})
	sg, _ := agreement.Summarize(gate, agreement.Options{Scale: gs})
	e := withNA.Engine
	if e.Pass == nil || e.Scored != 30*4 || e.Incomplete != 0 {
		t.Fatalf("engine: %+v", e)
	}
	wantStat(t, "pass alpha", e.Pass.KrippendorffAlpha, sp.KrippendorffAlpha)
	wantStat(t, "pass AC1", e.Pass.GwetAC1, sp.GwetAC1)
	wantStat(t, "gate percent", e.SafetyGate.PercentAgreement, sg.PercentAgreement)
	if len(e.Pass.Pairs) != 6 || len(e.Pass.Judges) != 1 || len(e.Score.Pairs) != 6 {
		t.Errorf("engine pairs: %d pass, %d judges, %d score", len(e.Pass.Pairs), len(e.Pass.Judges), len(e.Score.Pairs))
	}
	// Engine outputs do not depend on how NA is counted.
	if *without.Engine.Pass.PercentAgreement.Value != *e.Pass.PercentAgreement.Value {
		t.Error("NA as missing changed the engine's outputs")
	}
}

func TestFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, "empathetic-dialogue@2", 20, randomRows(20, []string{"ann", "bo", "cy"}, []string{"gpt", "claude"}, likertKeys, 5))
	// bo's labels of the first ten items were made long ago.
	_, err := f.db.Pool().Exec(ctx, `UPDATE labels l SET created_at = '2020-01-01' FROM items i
		WHERE i.id = l.item_id AND l.rater_id = $1 AND i.source_id < 'item-010'`, f.raterID["bo"])
	if err != nil {
		t.Fatal(err)
	}
	key := "emotion"
	cases := []struct {
		name   string
		opts   report.Options
		keep   func(label) bool
		raters int
		judges int
	}{
		{"two annotators", report.Options{Annotators: []int64{f.raterID["ann"], f.raterID["cy"]}},
			func(l label) bool { return l.rater == "ann" || l.rater == "cy" }, 2, 2},
		{"one judge", report.Options{Judges: []int64{f.raterID["gpt"]}}, humans, 3, 1},
		{"no judge", report.Options{Judges: []int64{}}, humans, 3, 0},
		{"recent labels", report.Options{From: time.Now().Add(-time.Hour)},
			func(l label) bool { return l.kind == "human" && !(l.rater == "bo" && l.item < "item-010") }, 3, 2},
		{"old labels", report.Options{To: time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)},
			func(l label) bool { return l.rater == "bo" && l.item < "item-010" }, 1, 0},
	}
	scale, _ := agreement.ParseScale("1,2,3,4,5")
	for _, c := range cases {
		r := f.build(t, c.opts)
		s, err := agreement.Summarize(f.ratings(t, key, c.keep), agreement.Options{Scale: scale, Level: agreement.Ordinal, Weights: agreement.QuadraticWeights})
		if err != nil {
			t.Fatal(err)
		}
		it := r.RubricItems[0]
		if it.Raters != c.raters || len(it.Judges) != c.judges || it.Items != s.Items {
			t.Errorf("%s: %d raters, %d judges, %d items; want %d, %d, %d", c.name, it.Raters, len(it.Judges), it.Items, c.raters, c.judges, s.Items)
		}
		if c.raters >= 2 {
			wantStat(t, c.name+" alpha", it.Statistics.KrippendorffAlpha, s.KrippendorffAlpha)
		}
	}
	// A project has one rubric version: any other is refused.
	_, err = report.Build(ctx, f.db, f.project, report.Options{Rubric: "empathetic-dialogue@1", Alt: report.AltOptions{Epsilon: report.DefaultEpsilon}})
	if !errors.Is(err, attune.ErrInvalid) {
		t.Fatalf("other rubric version: %v", err)
	}
	if _, err := report.Build(ctx, f.db, f.project, report.Options{Rubric: f.project.RubricRef, Alt: report.AltOptions{Epsilon: report.DefaultEpsilon}}); err != nil {
		t.Fatal(err)
	}
}

// TestIntervals checks that the report's intervals are reproducible,
// named, and agreement's own (another seed gives bounds within a fraction
// of the width).
func TestIntervals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "empathetic-dialogue@2", 60, randomRows(60, []string{"ann", "bo", "cy"}, nil, likertKeys[:1], 11))
	b := agreement.Bootstrap{Replicates: 2000, Level: 0.9, Seed: 3}
	r1 := f.build(t, report.Options{Bootstrap: b})
	r2 := f.build(t, report.Options{Bootstrap: b})
	a1, a2 := r1.RubricItems[0].Statistics.KrippendorffAlpha, r2.RubricItems[0].Statistics.KrippendorffAlpha
	if a1.CI == nil || *a1.CI != *a2.CI {
		t.Fatalf("intervals differ between two builds: %+v, %+v", a1.CI, a2.CI)
	}
	if a1.CI.Method != agreement.MethodWideBCa {
		t.Errorf("interval method %q, want %q", a1.CI.Method, agreement.MethodWideBCa)
	}
	scale, _ := agreement.ParseScale("1,2,3,4,5")
	units, err := f.ratings(t, "emotion", humans).Units(scale)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := agreement.BootstrapUnits(units, b,
		func(u agreement.Units) agreement.Estimate { return agreement.KrippendorffAlpha(u, agreement.Ordinal) },
		agreement.PercentAgreement)
	if err != nil {
		t.Fatal(err)
	}
	for i, got := range []report.Stat{a1, r1.RubricItems[0].Statistics.PercentAgreement} {
		want := ref[i].CI
		// Two independent resamplings of the same law: the bounds agree to
		// within a fraction of the interval's width.
		tol := (want.Upper - want.Lower) / 5
		if math.Abs(got.CI.Lower-want.Lower) > tol || math.Abs(got.CI.Upper-want.Upper) > tol {
			t.Errorf("interval %d: [%v, %v], agreement's [%v, %v]", i, got.CI.Lower, got.CI.Upper, want.Lower, want.Upper)
		}
	}
	none := f.build(t, report.Options{})
	if none.RubricItems[0].Statistics.KrippendorffAlpha.CI != nil {
		t.Error("an interval without replicates")
	}
}

func TestCSVNeutralisesFormulas(t *testing.T) {
	t.Parallel()
	rows := randomRows(6, []string{"=HYPERLINK(\"http://x.example\",\"x\")", "bo"}, []string{"@judge"}, likertKeys[:1], 2)
	f := newFixture(t, "empathetic-dialogue@2", 6, rows)
	r := f.build(t, report.Options{})
	var b bytes.Buffer
	if err := r.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recs[0], report.CSVHeader) {
		t.Fatalf("header %v", recs[0])
	}
	seen := 0
	for _, rec := range recs[1:] {
		for _, c := range rec {
			if c != "" && strings.ContainsRune("=+@\t\r", rune(c[0])) {
				t.Fatalf("cell %q would run as a formula: %v", c, rec)
			}
			if c == `'=HYPERLINK("http://x.example","x")` || c == "'@judge" {
				seen++
			}
		}
	}
	if seen == 0 {
		t.Fatal("the raters' names are not in the CSV")
	}
}

// TestHandCounted checks the counts of a fixture small enough to count by
// hand, with NA as a category and as missing.
func TestHandCounted(t *testing.T) {
	t.Parallel()
	rows := []label{
		{"item-000", "ann", "human", "CQ1", "YES"}, {"item-000", "bo", "human", "CQ1", "YES"}, {"item-000", "judge", "judge", "CQ1", "YES"},
		{"item-001", "ann", "human", "CQ1", "YES"}, {"item-001", "bo", "human", "CQ1", "NO"}, {"item-001", "judge", "judge", "CQ1", "NO"},
		{"item-002", "ann", "human", "CQ1", "NA"}, {"item-002", "bo", "human", "CQ1", "NA"}, {"item-002", "judge", "judge", "CQ1", "ERROR"},
		{"item-003", "ann", "human", "CQ1", "NO"}, {"item-003", "judge", "judge", "CQ1", "NO"},
	}
	f := newFixture(t, "coaching-conversation@2.0", 4, rows)
	type want struct {
		items                   int
		percent                 float64
		annBo, annJudge         [][]int
		consensus               [][]int
		errors, na              int
		leniencyAnn, leniencyBo float64
	}
	for _, c := range []struct {
		naMissing bool
		want      want
	}{
		{false, want{4, 2.0 / 3, [][]int{{1, 1, 0}, {0, 0, 0}, {0, 0, 1}}, [][]int{{1, 1, 0}, {0, 1, 0}, {0, 0, 0}},
			[][]int{{1, 0, 0}, {0, 0, 0}, {0, 0, 0}}, 1, 0, 1.0 / 3, -1.0 / 3}},
		{true, want{3, 0.5, [][]int{{1, 1}, {0, 0}}, [][]int{{1, 1}, {0, 1}}, [][]int{{1, 0}, {0, 0}}, 1, 2, 0.5, -0.5}},
	} {
		r := f.build(t, report.Options{NAMissing: c.naMissing})
		it := r.RubricItems[0]
		w := c.want
		pair := func(a, b string) [][]int {
			for _, p := range it.Pairs {
				if p.A == f.raterID[a] && p.B == f.raterID[b] {
					return p.Confusion
				}
			}
			return nil
		}
		if it.Items != w.items || !near(*it.Statistics.PercentAgreement.Value, w.percent) || it.Missing.Errors != w.errors || it.Missing.NA != w.na {
			t.Errorf("NA missing %v: %d items, agreement %v, missing %+v", c.naMissing, it.Items, *it.Statistics.PercentAgreement.Value, it.Missing)
		}
		if fmt.Sprint(pair("ann", "bo")) != fmt.Sprint(w.annBo) || fmt.Sprint(pair("ann", "judge")) != fmt.Sprint(w.annJudge) {
			t.Errorf("NA missing %v: ann×bo %v, ann×judge %v", c.naMissing, pair("ann", "bo"), pair("ann", "judge"))
		}
		if fmt.Sprint(it.Judges[0].Consensus.Confusion) != fmt.Sprint(w.consensus) {
			t.Errorf("NA missing %v: judge × consensus %v", c.naMissing, it.Judges[0].Consensus.Confusion)
		}
		if !near(*it.Annotators[0].Leniency.Value, w.leniencyAnn) || !near(*it.Annotators[1].Leniency.Value, w.leniencyBo) {
			t.Errorf("NA missing %v: leniency %v and %v", c.naMissing, *it.Annotators[0].Leniency.Value, *it.Annotators[1].Leniency.Value)
		}
	}
}

// TestAltTestInReport checks each judge's alt-test in the report against
// agreement.AltTest over the same labels as triples (ERROR left out), on
// a Likert rubric (negative RMSE) and a criteria one (accuracy), and that
// bad alt-test options are refused naming the field.
func TestAltTestInReport(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		ref  string
		rows []label
		keys []string
	}{
		{"empathetic-dialogue@2", randomRows(60, []string{"ann", "bo", "cy"}, []string{"judge-a", "judge-b"}, []string{"emotion", "validation", "helpfulness", "safety", "overall"}, 5), nil},
		{"coaching-conversation@2.0", criteriaRows(60, []string{"ann", "bo", "cy"}, []string{"judge-a"}, 8), criteriaKeys},
	} {
		f := newFixture(t, c.ref, 60, c.rows)
		opts := report.Options{Alt: report.AltOptions{Epsilon: 0.2, MinItems: 10}}
		r := f.build(t, opts)
		if r.AltTest.Epsilon != 0.2 || r.AltTest.Scoring != "default" || r.AltTest.MinItems != 10 || r.AltTest.Q != 0.05 {
			t.Errorf("%s: settings %+v", c.ref, r.AltTest)
		}
		checked := 0
		for _, it := range r.RubricItems {
			s, err := agreement.NewScale(it.Scale...)
			if err != nil {
				t.Fatal(err)
			}
			for _, j := range it.Judges {
				name := ""
				for _, x := range r.Raters {
					if x.ID == j.Rater {
						name = x.Name
					}
				}
				tab := f.ratings(t, it.Key, func(l label) bool { return l.kind == "human" || l.rater == name }, "ERROR")
				want, err := agreement.AltTest(tab, s, name, agreement.DefaultAltScoring(s), agreement.AltOptions{Epsilon: 0.2, MinItems: 10})
				if err != nil {
					t.Fatal(err)
				}
				got := j.AltTest
				if got.Scoring != want.Scoring.String() || got.Tested != want.Tested || got.Passed != want.Passed || len(got.Humans) != len(want.Humans) ||
					(got.WinningRate.Value == nil) != !want.WinningRate.Defined ||
					(got.WinningRate.Value != nil && (*got.WinningRate.Value != want.WinningRate.Value || !near(*got.AdvantageProbability.Value, want.AdvantageProbability.Value))) {
					t.Errorf("%s %s %s: report %+v, table %+v", c.ref, it.Key, name, got, want)
					continue
				}
				for _, h := range got.Humans {
					at := slices.IndexFunc(want.Humans, func(w agreement.AltHuman) bool { return f.raterID[w.Rater] == h.Rater })
					w := want.Humans[at]
					if h.Items != w.Items || h.Tested != w.Tested || h.Rejected != w.Rejected || (h.PValue != nil && !near(*h.PValue, w.P)) {
						t.Errorf("%s %s %s: annotator %+v, table %+v", c.ref, it.Key, name, h, w)
					}
				}
				if !strings.Contains(j.Verdict, "ε = 0.2") {
					t.Errorf("verdict %q does not give ε", j.Verdict)
				}
				checked++
			}
		}
		if checked == 0 {
			t.Fatalf("%s: no judge checked", c.ref)
		}
	}
	f := newFixture(t, "coaching-conversation@2.0", 5, criteriaRows(5, []string{"ann", "bo"}, []string{"judge-a"}, 1))
	for field, opts := range map[string]report.Options{
		"alt_scoring":   {Alt: report.AltOptions{Epsilon: report.DefaultEpsilon, Scoring: "neg_rmse"}},
		"epsilon":       {Alt: report.AltOptions{Epsilon: -0.1}},
		"alt_min_items": {Alt: report.AltOptions{Epsilon: report.DefaultEpsilon, MinItems: 1}},
		"level":         {Level: "cardinal"},
	} {
		_, err := report.Build(context.Background(), f.db, f.project, opts)
		var ve *attune.ValidationError
		if !errors.As(err, &ve) || ve.Fields[field] == "" {
			t.Errorf("%s: %v, want an invalid %s", field, err, field)
		}
	}
}

// TestBoundariesHandCounted checks where the disagreement falls on a 1–5
// item, among the people and for a judge, against counts worked by hand
// (docs/agreement.md: each disagreeing pair a < b gives 1/(b − a) to each
// boundary between them).
func TestBoundariesHandCounted(t *testing.T) {
	t.Parallel()
	rows := []label{
		{"item-000", "ann", "human", "emotion", "1"}, {"item-000", "bo", "human", "emotion", "3"}, {"item-000", "cy", "human", "emotion", "3"}, {"item-000", "judge", "judge", "emotion", "3"},
		{"item-001", "ann", "human", "emotion", "4"}, {"item-001", "bo", "human", "emotion", "3"}, {"item-001", "judge", "judge", "emotion", "2"},
		{"item-002", "ann", "human", "emotion", "5"}, {"item-002", "bo", "human", "emotion", "5"}, {"item-002", "judge", "judge", "emotion", "4"},
	}
	f := newFixture(t, "empathetic-dialogue@2", 3, rows)
	r := f.build(t, report.Options{})
	b := r.RubricItems[0].Boundaries
	if r.RubricItems[0].Key != "emotion" || b == nil || len(b.Judges) != 1 || b.Judges[0].Rater != f.raterID["judge"] {
		t.Fatalf("boundaries %+v", b)
	}
	// People: ann–bo 1/3, 4/3, 5/5; ann–cy 1/3; bo–cy 3/3.
	// The judge: with ann 3/1, 2/4, 4/5; with bo 3/3, 2/3, 4/5; with cy 3/3.
	for _, c := range []struct {
		who    string
		split  agreement.BoundarySplit
		n      int
		shares []float64
	}{
		{"people", b.Annotators, 3, []float64{1.0 / 3, 1.0 / 3, 1.0 / 3, 0}},
		{"judge", b.Judges[0].BoundarySplit, 5, []float64{0.1, 0.4, 0.1, 0.4}},
	} {
		if c.split.Disagreements != c.n || len(c.split.Boundaries) != 4 {
			t.Fatalf("%s: %+v", c.who, c.split)
		}
		for k, bd := range c.split.Boundaries {
			if bd.Lower != fmt.Sprint(k+1) || bd.Upper != fmt.Sprint(k+2) || bd.Share == nil || !near(*bd.Share, c.shares[k]) {
				t.Errorf("%s %s|%s: share %v, want %v", c.who, bd.Lower, bd.Upper, bd.Share, c.shares[k])
			}
		}
	}
	// The rubric's guidance sits beside its boundary: emotion has 1 vs 2
	// and 3 vs 4.
	g := b.Guidance
	if len(g) != 4 || len(g[0].Texts) != 1 || len(g[1].Texts) != 0 || len(g[2].Texts) != 1 || !strings.Contains(g[2].Texts[0], "specifically named") {
		t.Fatalf("guidance %+v", g)
	}
	// A criteria rubric has no boundaries.
	c := newFixture(t, "coaching-conversation@2.0", 1, []label{{"item-000", "ann", "human", "CQ1", "YES"}, {"item-000", "bo", "human", "CQ1", "NO"}})
	if b := c.build(t, report.Options{}).RubricItems[0].Boundaries; b != nil {
		t.Fatalf("criteria boundaries %+v", b)
	}
	// In the JSON, under each rubric item.
	js, err := json.Marshal(r.RubricItems[0])
	if err != nil || !strings.Contains(string(js), `"boundaries":{"annotators":{"n_disagreements":3,"n_other":0,"boundaries":[{"lower":"1","upper":"2","weight":1,"share":0.3333333333333333,"n_crossing":2}`) {
		t.Fatalf("json %v: %.600s", err, js)
	}
}

// TestWithheldInterval checks that a figure resting on too few
// informative items is shown without its interval, and that the report's
// JSON and CSV say why with the count and the minimum (agreement.Reach):
// 30 items both annotators call YES but one, which one calls NO.
func TestWithheldInterval(t *testing.T) {
	t.Parallel()
	var rows []label
	for i := range 30 {
		b := "YES"
		if i == 7 {
			b = "NO"
		}
		item := fmt.Sprintf("item-%03d", i)
		rows = append(rows, label{item, "ann", "human", "CQ1", "YES"}, label{item, "bo", "human", "CQ1", b})
	}
	f := newFixture(t, "coaching-conversation@2.0", 30, rows)
	r := f.build(t, report.Options{Bootstrap: agreement.Bootstrap{Replicates: 200, Level: 0.95, Seed: 1}})
	st := r.RubricItems[0].Statistics
	if st.GwetAC1.Value == nil || st.GwetAC1.CI != nil || st.GwetAC1.Withheld == nil {
		t.Fatalf("AC1 %+v: want the figure without its interval", st.GwetAC1)
	}
	if st.PercentAgreement.CI == nil {
		t.Errorf("percent agreement %+v: want its interval (it has no minimum)", st.PercentAgreement)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		RubricItems []struct {
			Statistics struct {
				AC1 map[string]json.RawMessage `json:"gwet_ac1"`
			} `json:"statistics"`
			Pairs []struct {
				Kappa map[string]json.RawMessage `json:"cohen_kappa"`
			} `json:"pairs"`
		} `json:"rubric_items"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := `{"reason":"not enough informative items to bound it","informative_items":1,"min_informative_items":2}`
	if w := string(got.RubricItems[0].Statistics.AC1["ci_withheld"]); w != want {
		t.Errorf("gwet_ac1.ci_withheld = %s, want %s", w, want)
	}
	// ann always says YES, so the pair's kappa is 0 in every resample:
	// withheld in the same shape, for the other reason.
	if w, want := string(got.RubricItems[0].Pairs[0].Kappa["ci_withheld"]), `{"reason":"`+agreement.ReasonNoResampleSpread+`"}`; w != want {
		t.Errorf("the pair's cohen_kappa.ci_withheld = %s, want %s", w, want)
	}
	var csvOut bytes.Buffer
	if err := r.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&csvOut).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, rec := range recs {
		if rec[0] == "CQ1" && rec[1] == "gwet_ac1" && rec[3] == "annotators" {
			found = true
			if rec[8] != "" || rec[10] != "not enough informative items to bound it (1 of the 2 it needs)" {
				t.Errorf("CSV row %q: want no bounds and the reason in note", rec)
			}
		}
	}
	if !found {
		t.Error("no CSV row for the annotators' AC1 on CQ1")
	}
}
