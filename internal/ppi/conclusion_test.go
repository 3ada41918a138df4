package ppi

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestConclude checks the order and the outside checks on hand-made
// estimates: each system's human interval, judge-only mean and
// prediction-powered mean are given as written.
func TestConclude(t *testing.T) {
	t.Parallel()
	sys := func(name string, hlo, hhi, judge, ppi float64) SystemEstimate {
		return SystemEstimate{System: name, Estimate: Estimate{
			Human: Interval{Mean: (hlo + hhi) / 2, Low: hlo, High: hhi},
			Judge: Interval{Mean: judge, Low: judge - 0.01, High: judge + 0.01},
			PPI:   Tuned{Interval: Interval{Mean: ppi, Low: ppi - 0.1, High: ppi + 0.1}}}}
	}
	for _, c := range []struct {
		name      string
		systems   []SystemEstimate
		overall   *SystemEstimate
		judge     []string
		ppi       []string
		swapped   string
		outside   string // system:by, comma-separated
		changed   bool
		summaryOf string
	}{
		{name: "agree", systems: []SystemEstimate{sys("a", 0.5, 0.9, 0.8, 0.7), sys("b", 0.2, 0.6, 0.4, 0.4)},
			judge: []string{"a", "b"}, ppi: []string{"a", "b"}, summaryOf: "same conclusion"},
		{name: "order swapped", systems: []SystemEstimate{sys("a", 0.5, 0.9, 0.6, 0.8), sys("b", 0.4, 0.8, 0.7, 0.5)},
			judge: []string{"b", "a"}, ppi: []string{"a", "b"}, swapped: "a/b", changed: true, summaryOf: "orders a and b the other way round"},
		{name: "above and below", systems: []SystemEstimate{sys("a", 0.5, 0.7, 0.9, 0.6), sys("b", 0.3, 0.5, 0.1, 0.4)},
			judge: []string{"a", "b"}, ppi: []string{"a", "b"}, outside: "a:0.2,b:-0.2", changed: true, summaryOf: "lies 0.200 above"},
		{name: "overall outside", systems: []SystemEstimate{sys("a", 0.5, 0.9, 0.8, 0.7)},
			overall: &SystemEstimate{System: Overall, Estimate: Estimate{Human: Interval{Low: 0.6, High: 0.7}, Judge: Interval{Mean: 0.5}}},
			judge:   []string{"a"}, ppi: []string{"a"}, outside: "(all):-0.1", changed: true, summaryOf: "below"},
		{name: "ties swap nothing", systems: []SystemEstimate{sys("a", 0.4, 0.8, 0.6, 0.6), sys("b", 0.4, 0.8, 0.6, 0.5)},
			judge: []string{"a", "b"}, ppi: []string{"a", "b"}, summaryOf: "same conclusion"},
		{name: "no systems", judge: []string{}, ppi: []string{}, summaryOf: "no estimate yet"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Conclude(SystemEstimates{Systems: c.systems, Overall: c.overall})
			if !slices.Equal(got.Order.Judge, c.judge) || !slices.Equal(got.Order.PPI, c.ppi) {
				t.Errorf("order judge %v ppi %v, want %v %v", got.Order.Judge, got.Order.PPI, c.judge, c.ppi)
			}
			var swapped []string
			for _, p := range got.Order.Swapped {
				swapped = append(swapped, p[0]+"/"+p[1])
			}
			if strings.Join(swapped, ",") != c.swapped || got.Order.Same != (c.swapped == "") {
				t.Errorf("swapped %v same %v, want %q", swapped, got.Order.Same, c.swapped)
			}
			var outside []string
			for _, o := range got.Outside {
				outside = append(outside, fmt.Sprintf("%s:%g", o.System, math.Round(o.By*1e9)/1e9))
			}
			if strings.Join(outside, ",") != c.outside {
				t.Errorf("outside %v, want %q", outside, c.outside)
			}
			if got.Changed != c.changed || !strings.Contains(got.Summary, c.summaryOf) {
				t.Errorf("changed %v %q, want %v saying %q", got.Changed, got.Summary, c.changed, c.summaryOf)
			}
		})
	}
}
