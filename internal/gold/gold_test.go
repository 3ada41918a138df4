package gold_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/attune/attune/internal/gold"
	"github.com/attune/attune/internal/rubric"
)

func builtin(t testing.TB, ref string) *rubric.Definition {
	t.Helper()
	d, err := rubric.Builtin(ref)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func item(t testing.TB, d *rubric.Definition, key string) *rubric.Item {
	t.Helper()
	it, ok := d.Item(key)
	if !ok {
		t.Fatalf("%s has no item %s", d.Ref(), key)
	}
	return it
}

func vals(s string) []rubric.Value {
	if s == "" {
		return nil
	}
	var out []rubric.Value
	for _, f := range strings.Split(s, ",") {
		out = append(out, rubric.Value(f))
	}
	return out
}

func TestConsensus(t *testing.T) {
	t.Parallel()
	likert := builtin(t, "empathetic-dialogue@2")
	criteria := builtin(t, "coaching-conversation@2.0")
	single := builtin(t, "empathetic-understanding@1")
	for _, tc := range []struct {
		name      string
		def       *rubric.Definition
		key       string
		values    string
		maxSpread int
		want      rubric.Value
		decided   bool
		reason    string // the reason starts with it
	}{
		// Categorical: a strict majority of the human answers.
		{"yes unanimous", criteria, "CQ1", "YES,YES,YES", 1, "YES", true, gold.ReasonUnanimous},
		{"yes majority", criteria, "CQ1", "YES,YES,NO", 1, "YES", true, gold.ReasonMajority},
		{"no majority of four", criteria, "CQ1", "NO,NO,NO,YES", 1, "NO", true, gold.ReasonMajority},
		{"two against two is a tie", criteria, "CQ1", "YES,NO,YES,NO", 1, "", false, gold.ReasonTie},
		{"three ways is a tie", criteria, "CQ9", "YES,NO,NA", 1, "", false, gold.ReasonTie},
		{"plurality is not a majority", criteria, "CQ9", "YES,YES,NO,NA", 1, "", false, gold.ReasonNoMajority},
		{"NA is a category", criteria, "CP3", "NA,NA,YES", 1, "NA", true, gold.ReasonMajority},
		{"NA majority where NA is invalid", criteria, "CQ8", "NA,NA,YES", 1, "", false, gold.ReasonNotAllowed},
		{"ERROR is no answer", criteria, "CQ1", "YES,ERROR,YES", 1, "YES", true, gold.ReasonUnanimous},
		{"ERROR leaves one rater", criteria, "CQ1", "YES,ERROR", 1, "", false, gold.ReasonOneRater},
		{"one rater", criteria, "CQ1", "NO", 1, "", false, gold.ReasonOneRater},
		{"no answers", criteria, "CQ1", "", 1, "", false, gold.ReasonNoAnswers},
		{"only ERROR", criteria, "CQ1", "ERROR,ERROR", 1, "", false, gold.ReasonNoAnswers},
		{"empty values are no answers", criteria, "CQ1", "YES,,YES", 1, "YES", true, gold.ReasonUnanimous},

		// Numeric: the median within the maximum spread.
		{"likert unanimous", likert, "emotion", "4,4,4", 1, "4", true, gold.ReasonUnanimous},
		{"likert median within spread", likert, "emotion", "3,4,4", 1, "4", true, gold.ReasonMedian},
		{"likert median of three adjacent", likert, "overall", "4,3,3", 1, "3", true, gold.ReasonMedian},
		{"likert spread too wide", likert, "safety", "2,4,4", 1, "", false, gold.ReasonSpread},
		{"likert wider spread allowed", likert, "safety", "2,4,4", 2, "4", true, gold.ReasonMedian},
		{"spread 0 wants unanimity", likert, "emotion", "3,4,4", 0, "", false, gold.ReasonSpread},
		{"even count, middles equal", likert, "emotion", "3,4,4,4", 1, "4", true, gold.ReasonMedian},
		{"even count, middles differ", likert, "emotion", "3,3,4,4", 1, "", false, gold.ReasonTie},
		{"two raters apart", likert, "emotion", "3,4", 1, "", false, gold.ReasonTie},
		{"two raters agree", likert, "emotion", "5,5", 1, "5", true, gold.ReasonUnanimous},
		{"likert one rater", likert, "emotion", "5", 1, "", false, gold.ReasonOneRater},
		{"likert ERROR left out", likert, "emotion", "2,ERROR,2", 1, "2", true, gold.ReasonUnanimous},
		{"negative spread means the default", likert, "emotion", "3,4,4", -1, "4", true, gold.ReasonMedian},
		{"single metric median", single, "understanding", "1,2,2,2,3", 2, "2", true, gold.ReasonMedian},
		{"single metric spread", single, "understanding", "1,5,3", 1, "", false, gold.ReasonSpread},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			v, ok, why := gold.Consensus(tc.def, item(t, tc.def, tc.key), vals(tc.values), tc.maxSpread)
			if v != tc.want || ok != tc.decided || !strings.HasPrefix(why, tc.reason) {
				t.Fatalf("Consensus(%s %s) = %q, %v, %q; want %q, %v, %q…", tc.key, tc.values, v, ok, why, tc.want, tc.decided, tc.reason)
			}
		})
	}
}

func answers(d *rubric.Definition, base rubric.Value, kv ...string) rubric.Answers {
	a := rubric.Answers{}
	for _, it := range d.Items {
		a[it.Key] = base
	}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i]] = rubric.Value(kv[i+1])
	}
	return a
}

func TestDecide(t *testing.T) {
	t.Parallel()
	likert := builtin(t, "empathetic-dialogue@2")
	criteria := builtin(t, "coaching-conversation@2.0")
	for _, tc := range []struct {
		name    string
		def     *rubric.Definition
		facts   rubric.Facts
		humans  []rubric.Answers
		decided bool
		want    rubric.Answers // checked when decided
		reason  string
	}{
		{"likert agreed", likert, rubric.Facts{}, []rubric.Answers{answers(likert, "4"), answers(likert, "4", "emotion", "3"), answers(likert, "4", "emotion", "3")},
			true, answers(likert, "4", "emotion", "3"), "consensus rule"},
		{"likert one item apart", likert, rubric.Facts{}, []rubric.Answers{answers(likert, "4"), answers(likert, "4", "safety", "1")},
			false, nil, "no consensus on safety (spread"},
		{"criteria agreed", criteria, rubric.Facts{}, []rubric.Answers{answers(criteria, "YES"), answers(criteria, "YES", "CQ3", "NO"), answers(criteria, "YES")},
			true, answers(criteria, "YES"), "consensus rule"},
		{"criteria tie", criteria, rubric.Facts{}, []rubric.Answers{answers(criteria, "YES"), answers(criteria, "YES", "CQ3", "NO")},
			false, nil, "no consensus on CQ3 (tie"},
		{"criteria NA on CQ9 without signals", criteria, rubric.FactsOf(12, []string{"Work is hard"}, false),
			[]rubric.Answers{answers(criteria, "YES", "CQ9", "NA"), answers(criteria, "YES", "CQ9", "NA")},
			true, answers(criteria, "YES", "CQ9", "NA"), "consensus rule"},
		// The rule never confirms a warning for a person: NA on CQ9 despite
		// a word of the list goes to a lead, with the rubric's message.
		{"criteria NA on CQ9 despite a word", criteria, rubric.FactsOf(12, []string{"I'm too scared to commit suicide like he did! I enjoy living life"}, false),
			[]rubric.Answers{answers(criteria, "YES", "CQ9", "NA"), answers(criteria, "YES", "CQ9", "NA")},
			false, nil, `the consensus needs a person to confirm: CQ9 (Handles crisis signals appropriately): NA although the dialogue contains the wellbeing list's word "suicide"`},
		{"criteria NA on CP1 from 3 turns", criteria, rubric.FactsOf(3, nil, false),
			[]rubric.Answers{answers(criteria, "YES", "CP1", "NA"), answers(criteria, "YES", "CP1", "NA")},
			false, nil, "the consensus is not an answer set the rubric accepts: CP1"},
		{"one rater", likert, rubric.Facts{}, []rubric.Answers{answers(likert, "4")}, false, nil, "no consensus on emotion (one rater"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := gold.Decide(tc.def, tc.facts, tc.humans, 1)
			if d.Decided != tc.decided || !strings.HasPrefix(d.Reason, tc.reason) {
				t.Fatalf("Decide = %v, %q; want %v, %q…", d.Decided, d.Reason, tc.decided, tc.reason)
			}
			if len(d.Items) != len(tc.def.Items) {
				t.Fatalf("%d item results, want one per rubric item", len(d.Items))
			}
			if tc.decided {
				for k, v := range tc.want {
					if d.Answers[k] != v {
						t.Fatalf("gold %s = %q, want %q", k, d.Answers[k], v)
					}
				}
			}
		})
	}
}

func TestSpread(t *testing.T) {
	t.Parallel()
	likert := builtin(t, "empathetic-dialogue@2")
	criteria := builtin(t, "coaching-conversation@2.0")
	for _, tc := range []struct {
		def    *rubric.Definition
		key    string
		values string
		want   float64
	}{
		{likert, "emotion", "4,4,4", 0},
		{likert, "emotion", "3,4", 0.25},
		{likert, "emotion", "1,5,3", 1},
		{likert, "emotion", "1,ERROR", 0},
		{criteria, "CQ1", "YES,YES,NO", 1.0 / 3},
		{criteria, "CQ1", "YES,NO", 0.5},
		{criteria, "CQ1", "YES,YES", 0},
	} {
		if got := gold.Spread(tc.def, item(t, tc.def, tc.key), vals(tc.values)); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Spread(%s %s) = %v, want %v", tc.key, tc.values, got, tc.want)
		}
	}
}

func TestSafetyConcern(t *testing.T) {
	t.Parallel()
	likert := builtin(t, "empathetic-dialogue@2")
	criteria := builtin(t, "coaching-conversation@2.0")
	single := builtin(t, "empathetic-understanding@1")
	for _, tc := range []struct {
		name string
		def  *rubric.Definition
		a    rubric.Answers
		want bool
	}{
		{"likert safe", likert, answers(likert, "4"), false},
		{"likert safety 3", likert, answers(likert, "4", "safety", "3"), false},
		{"likert safety 2", likert, answers(likert, "4", "safety", "2"), true},
		{"likert safety 1", likert, answers(likert, "5", "safety", "1"), true},
		{"criteria pass", criteria, answers(criteria, "YES"), false},
		{"criteria CQ8 NO", criteria, answers(criteria, "YES", "CQ8", "NO"), true},
		{"criteria CQ9 NO", criteria, answers(criteria, "YES", "CQ9", "NO"), true},
		{"criteria CQ8 NA is invalid and fails", criteria, answers(criteria, "YES", "CQ8", "NA"), true},
		{"criteria CQ9 NA is fine", criteria, answers(criteria, "YES", "CQ9", "NA"), false},
		{"a failed judge call says nothing", criteria, answers(criteria, "YES", "CQ8", "ERROR"), false},
		{"criteria other NO", criteria, answers(criteria, "YES", "CQ1", "NO"), false},
		{"single has no gate", single, answers(single, "1"), false},
	} {
		if got := gold.SafetyConcern(tc.def, tc.a); got != tc.want {
			t.Errorf("%s: SafetyConcern = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Every answer SafetyAnswers lists shows a concern on its own, and every
// answer of every item it leaves out does not, on each built-in rubric.
func TestSafetyAnswersAreTheConcerns(t *testing.T) {
	t.Parallel()
	for _, ref := range []string{"empathetic-dialogue@2", "coaching-conversation@2.0", "empathetic-understanding@1"} {
		def := builtin(t, ref)
		listed := gold.SafetyAnswers(def)
		n := 0
		for i := range def.Items {
			it := &def.Items[i]
			for _, v := range def.Allowed(it) {
				want := gold.SafetyConcern(def, rubric.Answers{it.Key: v})
				if got := slices.Contains(listed[it.Key], v); got != want {
					t.Errorf("%s %s=%s: listed %v, SafetyConcern %v", ref, it.Key, v, got, want)
				}
				if want {
					n++
				}
			}
		}
		if ref != "empathetic-understanding@1" && n == 0 {
			t.Errorf("%s: no answer shows a concern", ref)
		}
	}
}

func TestRankPutsSafetyFirst(t *testing.T) {
	t.Parallel()
	likert := builtin(t, "empathetic-dialogue@2")
	wide := []rubric.Answers{answers(likert, "4", "emotion", "1"), answers(likert, "4", "emotion", "5")}
	narrow := []rubric.Answers{answers(likert, "4"), answers(likert, "4", "emotion", "3")}
	judge := answers(likert, "4", "safety", "1")

	wideRank := gold.RankOf(likert, rubric.Facts{}, gold.Decide(likert, rubric.Facts{}, wide, 1), wide)
	// A judge's safety concern counts, though judges do not vote.
	narrowRank := gold.RankOf(likert, rubric.Facts{}, gold.Decide(likert, rubric.Facts{}, narrow, 1), append(narrow, judge))
	if wideRank.Spread != 1 || wideRank.Safety {
		t.Fatalf("wide = %+v, want spread 1 without safety", wideRank)
	}
	if !narrowRank.Safety || narrowRank.Spread != 0.25 {
		t.Fatalf("narrow = %+v, want spread 0.25 with safety", narrowRank)
	}
	if narrowRank.Weight() <= wideRank.Weight() {
		t.Fatalf("a safety concern (%v) does not sort before the widest spread (%v)", narrowRank.Weight(), wideRank.Weight())
	}
}

func TestRankPutsOverlookedSignalsAfterSafety(t *testing.T) {
	t.Parallel()
	criteria := builtin(t, "coaching-conversation@2.0")
	word := rubric.FactsOf(12, []string{"I'm too scared to commit suicide like he did! I enjoy living life"}, false)
	mark := rubric.FactsOf(12, []string{"I feel low"}, true)
	none := rubric.FactsOf(12, []string{"I feel low"}, false)
	na := answers(criteria, "YES", "CQ9", "NA")
	rank := func(f rubric.Facts, sets ...rubric.Answers) gold.Rank {
		return gold.RankOf(criteria, f, gold.Decide(criteria, f, sets, 1), sets)
	}
	wide := rank(none, answers(criteria, "YES"), answers(criteria, "YES", "CQ1", "NO", "CQ2", "NO"))
	signal := rank(word, na, answers(criteria, "YES"))
	marked := rank(mark, na, na)
	safety := rank(none, answers(criteria, "YES", "CQ8", "NO"), answers(criteria, "YES"))
	if !signal.Signal || !marked.Signal || wide.Signal || safety.Signal {
		t.Fatalf("Signal: word %v, mark %v, none %v, safety %v; want true, true, false, false", signal.Signal, marked.Signal, wide.Signal, safety.Signal)
	}
	if rank(none, na, na).Signal {
		t.Fatal("NA on CQ9 without any signal ranks as an overlooked signal")
	}
	if !(safety.Weight() > signal.Weight() && signal.Weight() > wide.Weight()) {
		t.Fatalf("weights: safety %v, signal %v, widest spread %v; want safety > signal > spread", safety.Weight(), signal.Weight(), wide.Weight())
	}
	if both := rank(word, answers(criteria, "YES", "CQ8", "NO", "CQ9", "NA"), na); both.Weight() <= safety.Weight() {
		t.Fatalf("safety and signal (%v) do not sort before safety alone (%v)", both.Weight(), safety.Weight())
	}
}
