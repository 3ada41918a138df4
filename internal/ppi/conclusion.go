package ppi

import (
	"fmt"
	"sort"
	"strings"
)

// Conclusion says whether the judge alone would change what the estimates
// conclude: whether the systems come in the same order by the judge-only
// means as by the prediction-powered ones, and which systems' judge-only
// mean lies outside the interval of the people's own mean. The people's
// interval is the reference because it is the one figure that carries no
// judge at all.
type Conclusion struct {
	// Changed is true when the order differs or any figure lies outside.
	Changed bool  `json:"changed"`
	Order   Order `json:"order"`
	// Outside lists the systems (and the whole, as Overall) whose
	// judge-only mean lies outside their human interval, in the order of
	// the estimates.
	Outside []Outside `json:"outside"`
	// Summary says the above in one sentence.
	Summary string `json:"summary"`
	// SafetyGate is the same check on the rate of failed safety gates,
	// set beside estimates of another quantity when the rubric has a
	// gate.
	SafetyGate *Conclusion `json:"safety_gate,omitempty"`
}

// Order is the systems ranked highest mean first by the judge-only means
// and by the prediction-powered means, and the pairs the two rank the
// other way round.
type Order struct {
	Judge   []string    `json:"judge"`
	PPI     []string    `json:"ppi"`
	Same    bool        `json:"same"`
	Swapped [][2]string `json:"swapped"`
}

// Outside is a judge-only mean that lies outside the human interval: By
// is how far beyond its nearer end, positive when above.
type Outside struct {
	System string   `json:"system"`
	Judge  float64  `json:"judge"`
	Human  Interval `json:"human"`
	By     float64  `json:"by"`
}

// Conclude checks est as Conclusion says. Systems tied on a mean keep
// their name order, and a pair tied on either mean is not swapped.
func Conclude(est SystemEstimates) Conclusion {
	c := Conclusion{Outside: []Outside{}, Order: Order{Judge: []string{}, PPI: []string{}, Swapped: [][2]string{}}}
	rank := func(mean func(SystemEstimate) float64) []string {
		s := append([]SystemEstimate(nil), est.Systems...)
		sort.SliceStable(s, func(i, j int) bool { return mean(s[i]) > mean(s[j]) })
		names := make([]string, len(s))
		for i, x := range s {
			names[i] = x.System
		}
		return names
	}
	judge := func(e SystemEstimate) float64 { return e.Judge.Mean }
	ppi := func(e SystemEstimate) float64 { return e.PPI.Mean }
	c.Order.Judge, c.Order.PPI = rank(judge), rank(ppi)
	for i, a := range est.Systems {
		for _, b := range est.Systems[i+1:] {
			dj, dp := judge(a)-judge(b), ppi(a)-ppi(b)
			if dj*dp < 0 {
				c.Order.Swapped = append(c.Order.Swapped, [2]string{a.System, b.System})
			}
		}
	}
	c.Order.Same = len(c.Order.Swapped) == 0
	all := est.Systems
	if est.Overall != nil {
		all = append(all[:len(all):len(all)], *est.Overall)
	}
	for _, e := range all {
		by := 0.0
		switch {
		case e.Judge.Mean > e.Human.High:
			by = e.Judge.Mean - e.Human.High
		case e.Judge.Mean < e.Human.Low:
			by = e.Judge.Mean - e.Human.Low
		default:
			continue
		}
		c.Outside = append(c.Outside, Outside{System: e.System, Judge: e.Judge.Mean, Human: e.Human, By: by})
	}
	c.Changed = !c.Order.Same || len(c.Outside) > 0
	c.Summary = c.summary(len(all))
	return c
}

func (c Conclusion) summary(compared int) string {
	if compared == 0 {
		return "There is no estimate yet to hold the judge's figures against."
	}
	if !c.Changed {
		return "The judge alone leads to the same conclusion: the same order of systems, and every judge-only mean within the people's interval."
	}
	var parts []string
	if !c.Order.Same {
		pairs := make([]string, len(c.Order.Swapped))
		for i, p := range c.Order.Swapped {
			pairs[i] = p[0] + " and " + p[1]
		}
		parts = append(parts, "it orders "+strings.Join(pairs, ", ")+" the other way round")
	}
	for _, o := range c.Outside {
		where := "above"
		if o.By < 0 {
			where = "below"
		}
		by := o.By
		if by < 0 {
			by = -by
		}
		parts = append(parts, fmt.Sprintf("its mean on %s, %.3f, lies %.3f %s the people's interval [%.3f, %.3f]", o.System, o.Judge, by, where, o.Human.Low, o.Human.High))
	}
	return "The judge alone changes the conclusion: " + strings.Join(parts, "; ") + "."
}
