package report

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/store"
)

func TestConsensus(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		counts  []int
		numeric bool
		want    int
	}{
		{[]int{0, 0, 3, 1, 0}, true, 2},
		{[]int{2, 2, 0, 0, 0}, true, 0}, // the lower median of an even number
		{[]int{1, 0, 2, 0, 0}, true, 2},
		{[]int{1, 1, 1, 1, 0}, true, 1},
		{[]int{0, 0, 0, 0, 3}, true, 4},
		{[]int{2, 1, 0}, false, 0},
		{[]int{1, 1, 0}, false, -1}, // a tie has no majority
		{[]int{0, 0, 0}, false, -1},
	} {
		if got := consensus(c.counts, c.numeric); got != c.want {
			t.Errorf("consensus(%v, %v) = %d, want %d", c.counts, c.numeric, got, c.want)
		}
	}
}

// TestMergeEqualsOneFold folds random answer sets once whole and once in
// two parts merged: the counts, and so every figure, must be the same.
func TestMergeEqualsOneFold(t *testing.T) {
	t.Parallel()
	def, err := rubric.Builtin("coaching-conversation@2.0")
	if err != nil {
		t.Fatal(err)
	}
	humans, judges := []int64{11, 12, 13}, []int64{21, 22}
	rng := rand.New(rand.NewPCG(4, 4))
	values := []string{"YES", "YES", "YES", "NO", "NA", "ERROR"}
	var sets []store.AnswerSetLabels
	for item := int64(1); item <= 200; item++ {
		for _, r := range append(append([]int64{}, humans...), judges...) {
			if rng.IntN(6) == 0 {
				continue
			}
			a := store.AnswerSetLabels{ItemID: item, RaterID: r}
			for _, it := range def.Items {
				if rng.IntN(20) == 0 {
					continue // an imported partial set
				}
				v := values[rng.IntN(len(values))]
				if v == "ERROR" && r < 20 {
					v = "NO"
				}
				a.Labels = append(a.Labels, store.LabelValue{Key: it.Key, Value: v})
			}
			sets = append(sets, a)
		}
	}
	build := func(parts ...func(int64) bool) string {
		folds := make([]*fold, len(parts))
		for i, in := range parts {
			f, err := newFold(def, humans, judges, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			for j := range sets {
				if in(sets[j].ItemID) {
					if err := f.add(&sets[j]); err != nil {
						t.Fatal(err)
					}
				}
			}
			f.finish()
			folds[i] = f
		}
		for _, g := range folds[1:] {
			folds[0].merge(g)
		}
		f := folds[0]
		var out []any
		for k := range f.items {
			out = append(out, f.rubricItem(k, agreement.Bootstrap{}, testFigures))
		}
		out = append(out, f.engineReport(agreement.Bootstrap{}))
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	whole := build(func(int64) bool { return true })
	halves := build(func(i int64) bool { return i <= 120 }, func(i int64) bool { return i > 120 })
	if whole != halves {
		i := 0
		for i < len(whole) && i < len(halves) && whole[i] == halves[i] {
			i++
		}
		lo := max(0, i-300)
		t.Fatalf("merged halves differ from one fold at byte %d:\n%s\n%s", i, whole[lo:min(len(whole), i+100)], halves[lo:min(len(halves), i+100)])
	}
	if !strings.Contains(whole, `"rater":21`) || !strings.Contains(whole, `"pass"`) || !strings.Contains(whole, `"p_value":0.`) {
		t.Fatalf("the folds counted little: %.400s", whole)
	}
}

// TestPatterns counts patterns keyed by number (up to eight categories of
// fewer than 256 ratings) and by bytes (the rest) alike.
func TestPatterns(t *testing.T) {
	t.Parallel()
	for _, counts := range [][]int{{1, 2, 0}, {0, 300, 1}, {1, 0, 0, 0, 0, 0, 0, 0, 0, 2}} {
		var p, q patterns
		p.add(counts)
		p.add(slices.Clone(counts))
		q.addN(counts, 3)
		p.add(make([]int, len(counts)))
		p.merge(&q)
		if len(p.list) != 2 || p.list[0].Weight != 5 || !slices.Equal(p.list[0].Counts, counts) || p.list[1].Weight != 1 {
			t.Errorf("%v: %+v", counts, p.list)
		}
	}
}

// testFigures are the figure options of the fold tests: default levels
// and scorings, and an alt-test that tests annotators from 2 items.
var testFigures = figureOptions{alt: agreement.AltOptions{Epsilon: 0.15, Q: agreement.DefaultAltQ, MinItems: 2}}

// foldSets folds answer sets given as rater → item → answers by key.
func foldSets(t *testing.T, def *rubric.Definition, humans, judges []int64, sets map[int64]map[int64]map[string]string) *fold {
	t.Helper()
	f, err := newFold(def, humans, judges, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var items []int64
	for _, byItem := range sets {
		for item := range byItem {
			if !slices.Contains(items, item) {
				items = append(items, item)
			}
		}
	}
	slices.Sort(items)
	for _, item := range items {
		for _, r := range append(append([]int64{}, humans...), judges...) {
			answers, ok := sets[r][item]
			if !ok {
				continue
			}
			a := store.AnswerSetLabels{ItemID: item, RaterID: r}
			for _, it := range def.Items {
				if v, ok := answers[it.Key]; ok {
					a.Labels = append(a.Labels, store.LabelValue{Key: it.Key, Value: v})
				}
			}
			if err := f.add(&a); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.finish()
	return f
}

// TestAC1CountsTheItemsAllowedAnswers: CQ8 allows YES and NO only, so
// Gwet's AC1 has q = 2 there. Two raters, four items (YES/YES twice,
// YES/NO, NO/NO): p_a = 3/4, π = (5/8, 3/8), p_e = 2·(5/8)(3/8)/(2-1) =
// 15/32, AC1 = (3/4 - 15/32)/(1 - 15/32) = 9/17 = 0.5294; with NA
// counted as a third category it would be 0.6735.
func TestAC1CountsTheItemsAllowedAnswers(t *testing.T) {
	t.Parallel()
	def, err := rubric.Builtin("coaching-conversation@2.0")
	if err != nil {
		t.Fatal(err)
	}
	answers := func(vs ...string) map[int64]map[string]string {
		m := map[int64]map[string]string{}
		for i, v := range vs {
			m[int64(i+1)] = map[string]string{"CQ8": v}
		}
		return m
	}
	f := foldSets(t, def, []int64{1, 2}, []int64{9}, map[int64]map[int64]map[string]string{
		1: answers("YES", "YES", "YES", "NO"),
		2: answers("YES", "YES", "NO", "NO"),
		9: answers("YES", "NA", "NO", "NO"), // a judge's NA, which CQ8 does not allow
	})
	k := f.keyIdx["CQ8"]
	it := f.rubricItem(k, agreement.Bootstrap{}, testFigures)
	if !slices.Equal(it.Scale, []string{"YES", "NO"}) {
		t.Fatalf("CQ8's scale is %v, want YES, NO", it.Scale)
	}
	if v := it.Statistics.GwetAC1.Value; v == nil || math.Abs(*v-9.0/17) > 1e-15 {
		t.Errorf("AC1 on CQ8 = %v, want 9/17 = 0.5294", it.Statistics.GwetAC1)
	}
	if it.Missing.NA != 1 || it.Judges[0].Items != 3 {
		t.Errorf("the judge's NA on CQ8: missing %+v, judge's items %d; want 1 NA left out and 3 items", it.Missing, it.Judges[0].Items)
	}
	// CQ1 allows NA: its scale keeps three categories.
	if got := f.rubricItem(f.keyIdx["CQ1"], agreement.Bootstrap{}, testFigures).Scale; len(got) != 3 {
		t.Errorf("CQ1's scale is %v, want YES, NO, NA", got)
	}
}

// TestFoldAltTestEqualsTheTable: the alt-test counted while folding
// equals agreement.AltTest over the same labels as a table.
func TestFoldAltTestEqualsTheTable(t *testing.T) {
	t.Parallel()
	for _, ref := range []string{"coaching-conversation@2.0", "empathetic-dialogue@2"} {
		def, err := rubric.Builtin(ref)
		if err != nil {
			t.Fatal(err)
		}
		key := def.Items[0].Key
		allowed := def.Allowed(&def.Items[0])
		humans, judges := []int64{11, 12, 13, 14}, []int64{21}
		rng := rand.New(rand.NewPCG(7, 7))
		sets := map[int64]map[int64]map[string]string{}
		table := agreement.NewRatings()
		for item := int64(1); item <= 120; item++ {
			for _, r := range append(append([]int64{}, humans...), judges...) {
				if rng.IntN(5) == 0 {
					continue
				}
				v := string(allowed[rng.IntN(len(allowed))])
				if r < 20 && rng.IntN(3) > 0 {
					v = string(allowed[int(item)%len(allowed)]) // people agree more often than chance
				}
				if sets[r] == nil {
					sets[r] = map[int64]map[string]string{}
				}
				sets[r][item] = map[string]string{key: v}
				if err := table.Add(strconv.FormatInt(item, 10), strconv.FormatInt(r, 10), v); err != nil {
					t.Fatal(err)
				}
			}
		}
		f := foldSets(t, def, humans, judges, sets)
		got := f.rubricItem(f.keyIdx[key], agreement.Bootstrap{}, testFigures).Judges[0].AltTest
		s, err := agreement.NewScale(f.items[f.keyIdx[key]].scale.Labels()...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := agreement.AltTest(table, s, "21", agreement.DefaultAltScoring(s), testFigures.alt)
		if err != nil {
			t.Fatal(err)
		}
		if got.Scoring != want.Scoring.String() || got.Tested != want.Tested || got.Passed != want.Passed ||
			*got.WinningRate.Value != want.WinningRate.Value || math.Abs(*got.AdvantageProbability.Value-want.AdvantageProbability.Value) > 1e-15 {
			t.Errorf("%s: folded %+v, table %+v", ref, got, want)
		}
		if len(got.Humans) != len(want.Humans) {
			t.Fatalf("%s: %d annotators, want %d", ref, len(got.Humans), len(want.Humans))
		}
		for _, h := range got.Humans {
			at := slices.IndexFunc(want.Humans, func(w agreement.AltHuman) bool { return w.Rater == strconv.FormatInt(h.Rater, 10) })
			if at < 0 {
				t.Fatalf("%s: annotator %d not in the table's test", ref, h.Rater)
			}
			w := want.Humans[at]
			if h.Items != w.Items || h.Rejected != w.Rejected || *h.PValue != w.P {
				t.Errorf("%s: annotator %+v, table %+v", ref, h, w)
			}
		}
		if want.Scoring != agreement.DefaultAltScoring(s) || (def.Kind == rubric.Likert) != (want.Scoring == agreement.AltNegRMSE) {
			t.Errorf("%s scored by %v", ref, want.Scoring)
		}
	}
}
