package report

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
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
			f, err := newFold(def, humans, judges, false)
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
			out = append(out, f.rubricItem(k, agreement.Bootstrap{}))
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
	if !strings.Contains(whole, `"rater":21`) || !strings.Contains(whole, `"pass"`) {
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
