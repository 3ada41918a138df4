package failmap

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestLengthBiasWorked checks the probe against figures worked by hand.
// Replies of 2, 4, …, 1024 characters are x = 1…10 (x̄ 5.5, Sxx 82.5).
// The judge answers 2 3 2 3 3 4 3 4 4 5: Σ(x−x̄)·J = 22.5, slope 22.5/82.5
// = 3/11. People answer 3,3 on the five shortest and 3,4 on the rest,
// means 3 and 3.5: Σ(x−x̄)·P = 0.5·12.5, slope 6.25/82.5 = 5/66. The
// difference is 3/11 − 5/66 = 13/66. The differences' residuals on x
// are −0.1636 0.6394 −0.5576 0.2455 0.0485 0.3515 −0.8455 −0.0424
// −0.2394 0.5636; with each weight (x−x̄)/(Sxx·√(1−h)) the HC2 standard
// error is 0.0576991…; Bell–McCaffrey's degrees of freedom are
// 0.0121212²/0.0000330531 = 4.44509, where t(0.975) = 2.6701680.
func TestLengthBiasWorked(t *testing.T) {
	judge := []string{"2", "3", "2", "3", "3", "4", "3", "4", "4", "5"}
	var items []Item
	for i, j := range judge {
		people := []string{"3", "3"}
		if i >= 5 {
			people = []string{"3", "4"}
		}
		items = append(items, Item{ReplyChars: 1 << (i + 1), Judge: j, People: people})
	}
	// Left out: an NA answer, an item with no reply, a person's NA.
	items = append(items,
		Item{ReplyChars: 50, Judge: "NA", People: []string{"3"}},
		Item{ReplyChars: -1, Judge: "5", People: []string{"1"}},
		Item{ReplyChars: 50, Judge: "5", People: []string{"NA"}},
	)
	l := LengthBias(items)
	if !l.Defined || l.Items != 10 {
		t.Fatalf("got %+v, want defined on 10 items", l)
	}
	se := 0.05769911385094478
	tq := 2.6701680432700474
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"judge", *l.Judge, 3.0 / 11},
		{"people", *l.People, 5.0 / 66},
		{"difference", *l.Difference, 13.0 / 66},
		{"low", *l.Low, 13.0/66 - tq*se},
		{"high", *l.High, 13.0/66 + tq*se},
	} {
		if math.Abs(c.got-c.want) > 1e-7 {
			t.Errorf("%s: got %.9f, want %.9f", c.name, c.got, c.want)
		}
	}
	if l.Verdict != VerdictLonger {
		t.Errorf("verdict %q, want %q", l.Verdict, VerdictLonger)
	}
}

func TestLengthBiasBinaryAndShorter(t *testing.T) {
	// The judge says YES on short replies and NO on long, people the
	// opposite half the time: a judge that favours short replies.
	var items []Item
	for i := range 30 {
		j, p := "NO", []string{"YES", "NO"}
		if (i < 15) != (i == 4 || i == 20) {
			j = "YES"
		}
		items = append(items, Item{ReplyChars: 20 * (i + 1), Judge: j, People: p})
	}
	l := LengthBias(items)
	if !l.Defined || math.Abs(*l.People) > 1e-12 || *l.Judge >= 0 || l.Verdict != VerdictShorter {
		t.Fatalf("got judge %g people %g [%g, %g] %q, want a negative judge slope, none for people, verdict shorter", *l.Judge, *l.People, *l.Low, *l.High, l.Verdict)
	}
	if *l.High >= 0 {
		t.Errorf("interval [%g, %g] should lie below 0", *l.Low, *l.High)
	}
}

func TestLengthBiasUndefined(t *testing.T) {
	few := make([]Item, MinLengthItems-1)
	for i := range few {
		few[i] = Item{ReplyChars: 10 * (i + 1), Judge: "YES", People: []string{"NO"}}
	}
	same := make([]Item, 30)
	for i := range same {
		same[i] = Item{ReplyChars: 120, Judge: strconv.Itoa(1 + i%5), People: []string{"3"}}
	}
	for name, items := range map[string][]Item{"few": few, "same length": same, "none": nil} {
		l := LengthBias(items)
		if l.Defined || l.Reason == "" || l.Difference != nil || l.Verdict != "" {
			t.Errorf("%s: got %+v, want undefined with a reason", name, l)
		}
	}
}

// simulate draws n items whose replies run from 32 to 2,048 characters
// (log₂ 5 to 11, z = (x − 8)/3 in [−1, 1]) and answers whose mean given
// length is exactly linear: on a 1–5 scale each answer is a base level
// 2, 3 or 4 moved one up or down with probabilities 1/3 ± s·z/2, so its
// mean is 3 + s·z; on YES/NO, YES has probability 1/2 + s·z/2. The
// judge's s is sj, each of three people's sp; the true difference of
// slopes per doubling is (sj − sp)/3 on the scale and (sj − sp)/6 on YES/NO.
func simulate(r *rand.Rand, n int, likert bool, sj, sp float64) []Item {
	answer := func(z, s float64) string {
		u := r.Float64()
		if !likert {
			if u < 0.5+s*z/2 {
				return "YES"
			}
			return "NO"
		}
		level := 2 + r.IntN(3)
		switch {
		case u < 1.0/3+s*z/2:
			level++
		case u < 2.0/3:
			level--
		}
		return strconv.Itoa(level)
	}
	items := make([]Item, n)
	for i := range items {
		x := 5 + 6*r.Float64()
		z := (x - 8) / 3
		items[i] = Item{
			ReplyChars: int(math.Round(math.Exp2(x))),
			Judge:      answer(z, sj),
			People:     []string{answer(z, sp), answer(z, sp), answer(z, sp)},
		}
	}
	return items
}

// TestLengthBiasCoverage holds the interval's coverage at nominal 0.95 to
// at least 0.93 over seeds, for few and many items, both scales, with and
// without a true difference. Rounding the lengths to whole characters
// moves the true slope by far less than the intervals' width.
func TestLengthBiasCoverage(t *testing.T) {
	const seeds = 1500
	for _, likert := range []bool{true, false} {
		for _, n := range []int{10, 25, 60, 200} {
			for _, s := range [][2]float64{{0, 0}, {0.3, 0.3}, {0.6, 0}} {
				name := fmt.Sprintf("likert=%v/n=%d/judge=%g/people=%g", likert, n, s[0], s[1])
				t.Run(name, func(t *testing.T) {
					truth := (s[0] - s[1]) / 3
					if !likert {
						truth /= 2
					}
					r := rand.New(rand.NewPCG(uint64(n), 33))
					covered, defined := 0, 0
					for range seeds {
						l := LengthBias(simulate(r, n, likert, s[0], s[1]))
						if !l.Defined {
							continue
						}
						defined++
						if *l.Low <= truth && truth <= *l.High {
							covered++
						}
					}
					t.Logf("covered in %d of %d", covered, defined)
					if got := float64(covered) / float64(defined); defined < seeds*9/10 || got < 0.93 {
						t.Errorf("coverage %.3f over %d defined of %d seeds, want ≥ 0.93", got, defined, seeds)
					}
				})
			}
		}
	}
}

// TestLengthBiasDetects: a judge swayed by length, beside people who are
// not or are less, is flagged in most seeds; a judge that follows length
// only as much as people do is flagged in at most 7 % of them.
func TestLengthBiasDetects(t *testing.T) {
	const seeds = 1000
	for _, c := range []struct {
		likert   bool
		sj, sp   float64
		min, max float64 // share of seeds whose interval excludes 0
	}{
		{true, 0.6, 0, 0.8, 1},
		{true, 0.6, 0.1, 0.8, 1},
		{false, 0.8, 0, 0.8, 1},
		{true, 0, 0, 0, 0.07},
		{true, 0.4, 0.4, 0, 0.07},
		{false, 0.5, 0.5, 0, 0.07},
	} {
		t.Run(fmt.Sprintf("likert=%v/judge=%g/people=%g", c.likert, c.sj, c.sp), func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(100*c.sj)))
			flagged := 0
			for range seeds {
				l := LengthBias(simulate(r, 300, c.likert, c.sj, c.sp))
				if l.Verdict != "" {
					flagged++
				}
			}
			t.Logf("flagged in %d of %d seeds", flagged, seeds)
			if got := float64(flagged) / seeds; got < c.min || got > c.max {
				t.Errorf("flagged in %.3f of seeds, want in [%g, %g]", got, c.min, c.max)
			}
		})
	}
}
