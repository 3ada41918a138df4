package agreement

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestMASIDistance(t *testing.T) {
	for _, c := range []struct {
		a, b TurnSet
		want float64
	}{
		{TurnSet{}, TurnSet{}, 0},
		{TurnSet{3}, TurnSet{}, 1},
		{TurnSet{2, 5}, TurnSet{5, 2, 2}, 0},       // order and repeats do not matter
		{TurnSet{1, 2}, TurnSet{2}, 1 - 0.5*2.0/3}, // subset: J 1/2, M 2/3
		{TurnSet{1, 2}, TurnSet{2, 3}, 1 - 1.0/3*1.0/3},
		{TurnSet{1}, TurnSet{4}, 1},
	} {
		if got := MASIDistance(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("MASI(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := MASIDistance(c.b, c.a); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("MASI(%v, %v) = %v, want %v (symmetric)", c.b, c.a, got, c.want)
		}
	}
}

// TestEvidenceAlphaWorkedExample is computed by hand. Item 1: {2} and {2}
// (distance 0); item 2: {1,2} and {2} (2/3); item 3: {3} and {4} (1);
// item 4 has one set and drops out. n = 6 pairable sets; D_o = (4/3 + 2)/6
// = 5/9. The distinct sets {2}×3, {1,2}, {3}, {4} give the unordered sum
// 3·2/3 + 3 + 3 + 1 + 1 + 1 = 11, so D_e = 22/30 = 11/15, and
// alpha = 1 − (5/9)/(11/15) = 8/33.
func TestEvidenceAlphaWorkedExample(t *testing.T) {
	items := [][]TurnSet{
		{{2}, {2}},
		{{1, 2}, {2}},
		{{3}, {4}},
		{{5}},
	}
	got := EvidenceAlpha(items)
	if !got.Defined || math.Abs(got.Value-8.0/33) > 1e-12 {
		t.Fatalf("alpha = %+v, want 8/33 = %v", got, 8.0/33)
	}
	o := Overlap(items)
	if o.Pairs != 3 || o.Overlapping != 2 || math.Abs(o.Share-2.0/3) > 1e-12 {
		t.Errorf("overlap = %+v, want 2 of 3 pairs", o)
	}
}

func TestEvidenceAlphaUndefined(t *testing.T) {
	if got := EvidenceAlpha([][]TurnSet{{{1}}, {{2}}}); got.Defined || got.Reason != ReasonNoPairable {
		t.Errorf("no pairable: %+v", got)
	}
	if got := EvidenceAlpha([][]TurnSet{{{1, 2}, {2, 1}}, {{1, 2}, {1, 2}}}); got.Defined || got.Reason != ReasonNoVariation {
		t.Errorf("one set only: %+v", got)
	}
	if o := Overlap([][]TurnSet{{{1}, {}}, {{2}}}); o.Pairs != 0 || o.Share != 0 {
		t.Errorf("an empty set is not compared: %+v", o)
	}
}

// TestEvidenceAlphaIsNominalOnSingletons: when every set holds one turn,
// MASI is 0 for the same turn and 1 otherwise, which is the nominal
// difference, so EvidenceAlpha must equal nominal Krippendorff's alpha on
// the same answers, whatever the data.
func TestEvidenceAlphaIsNominalOnSingletons(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	labels := []string{"1", "2", "3", "4"}
	s, err := NewScale(labels...)
	if err != nil {
		t.Fatal(err)
	}
	for trial := range 50 {
		var items [][]TurnSet
		var list []Unit
		for range 5 + rng.IntN(30) {
			m := 1 + rng.IntN(4)
			counts := make([]int, len(labels))
			var sets []TurnSet
			for range m {
				k := rng.IntN(len(labels))
				if rng.Float64() < 0.5 {
					k = 0 // skew the answers so both figures see structure
				}
				counts[k]++
				sets = append(sets, TurnSet{k + 1})
			}
			items = append(items, sets)
			list = append(list, Unit{Counts: counts, Weight: 1})
		}
		u, err := NewUnits(s, list)
		if err != nil {
			t.Fatal(err)
		}
		want := KrippendorffAlpha(u, Nominal)
		got := EvidenceAlpha(items)
		if got.Defined != want.Defined || math.Abs(got.Value-want.Value) > 1e-9 {
			t.Fatalf("trial %d: evidence alpha %+v, nominal alpha %+v", trial, got, want)
		}
	}
}

// TestEvidenceAgreementTooFew: below MinEvidenceItems items with two
// marked sets the figures are withheld, counts kept; from it they are
// given. Empty sets never count an item in.
func TestEvidenceAgreementTooFew(t *testing.T) {
	var items [][]TurnSet
	for i := range MinEvidenceItems - 1 {
		items = append(items, []TurnSet{{i + 1}, {i + 1}, {}})
	}
	items = append(items, []TurnSet{{2}, {}}) // one marked set: not compared
	f := EvidenceAgreement(items)
	if !f.TooFew || f.Items != MinEvidenceItems-1 || f.Alpha.Defined || f.Alpha.Reason != ReasonFewEvidenceItems || f.Overlap.Pairs != MinEvidenceItems-1 {
		t.Fatalf("below the minimum: %+v", f)
	}
	items = append(items, []TurnSet{{1, 2}, {3}})
	f = EvidenceAgreement(items)
	if f.TooFew || f.Items != MinEvidenceItems || !f.Alpha.Defined || f.Overlap.Pairs != MinEvidenceItems || f.Overlap.Overlapping != MinEvidenceItems-1 {
		t.Fatalf("at the minimum: %+v", f)
	}
}

// TestEvidenceAgreementWith pairs the judge's set with each person's on
// the same item, never two people's: item 0 gives two pairs (one
// overlapping), item 1 none (the judge marked nothing), item 2 one.
func TestEvidenceAgreementWith(t *testing.T) {
	judge := []TurnSet{{2}, {}, {4, 5}}
	people := [][]TurnSet{{{2}, {3}}, {{1}, {1}}, {{5}}}
	f := EvidenceAgreementWith(judge, people)
	if f.Items != 2 || f.Overlap.Pairs != 3 || f.Overlap.Overlapping != 2 || !f.TooFew {
		t.Fatalf("%+v", f)
	}
	// With enough items, alpha is the alpha of the units of two.
	for range MinEvidenceItems {
		judge = append(judge, TurnSet{1})
		people = append(people, []TurnSet{{1}})
	}
	f = EvidenceAgreementWith(judge, people)
	units := [][]TurnSet{{{2}, {2}}, {{2}, {3}}, {{4, 5}, {5}}}
	for range MinEvidenceItems {
		units = append(units, []TurnSet{{1}, {1}})
	}
	want := EvidenceAlpha(units)
	if f.TooFew || !f.Alpha.Defined || math.Abs(f.Alpha.Value-want.Value) > 1e-12 {
		t.Fatalf("alpha %+v, want %+v", f, want)
	}
}

// TestEvidenceOverlapSimulated holds the overlap share to the rate it
// estimates: two raters who each point at the turn where the dialogue
// fails with probability q, and otherwise at one of the other T−1 turns
// at random, name the same turn with probability q² + (1−q)²/(T−1). Over
// seeds, the share lies within four standard errors of it, and alpha is
// near 1 when both always find the turn and near 0 when both pick turns
// at random.
func TestEvidenceOverlapSimulated(t *testing.T) {
	const turns, n = 8, 2000
	for _, q := range []float64{1, 0.8, 0.5, 1.0 / turns} {
		want := q*q + (1-q)*(1-q)/(turns-1)
		for seed := range uint64(5) {
			rng := rand.New(rand.NewPCG(seed, 33))
			pick := func(fail int) TurnSet {
				if rng.Float64() < q {
					return TurnSet{fail}
				}
				t := 1 + rng.IntN(turns-1)
				if t >= fail {
					t++
				}
				return TurnSet{t}
			}
			items := make([][]TurnSet, n)
			for i := range items {
				fail := 1 + rng.IntN(turns)
				items[i] = []TurnSet{pick(fail), pick(fail)}
			}
			f := EvidenceAgreement(items)
			se := math.Sqrt(want * (1 - want) / n)
			if f.Overlap.Pairs != n || math.Abs(f.Overlap.Share-want) > 4*se+1e-12 {
				t.Errorf("q %.3f seed %d: share %.4f of %d pairs, want %.4f ± %.4f", q, seed, f.Overlap.Share, f.Overlap.Pairs, want, 4*se)
			}
			switch {
			case q == 1 && (!f.Alpha.Defined || f.Alpha.Value < 0.999):
				t.Errorf("seed %d: raters who always agree: alpha %+v", seed, f.Alpha)
			case q == 1.0/turns && (!f.Alpha.Defined || math.Abs(f.Alpha.Value) > 0.05):
				t.Errorf("seed %d: raters at random: alpha %+v, want near 0", seed, f.Alpha)
			}
		}
	}
}
