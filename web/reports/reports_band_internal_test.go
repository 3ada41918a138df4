package reports

import (
	"strconv"
	"testing"

	"github.com/attune/attune/internal/report"
)

// TestReportAlphaBand reads alpha by Krippendorff's thresholds, their
// edges included: 0.800 is good, 0.667 tentative, just below each the
// band under it.
func TestReportAlphaBand(t *testing.T) {
	v := func(x float64) report.Stat { return report.Stat{Value: &x} }
	for _, tc := range []struct {
		s           report.Stat
		word, class string
	}{
		{v(0.95), "good", "good"},
		{v(0.8), "good", "good"},
		{v(0.7999), "tentative", "fair"},
		{v(0.667), "tentative", "fair"},
		{v(0.6669), "poor", "poor"},
		{v(-0.2), "poor", "poor"},
		{report.Stat{Reason: "fewer than two raters"}, "undefined", "undefined"},
	} {
		word, class := alphaBand(tc.s)
		if word != tc.word || class != tc.class {
			alpha := "undefined"
			if tc.s.Value != nil {
				alpha = strconv.FormatFloat(*tc.s.Value, 'f', -1, 64)
			}
			t.Errorf("alpha %s reads %s (class %s), want %s (class %s)", alpha, word, class, tc.word, tc.class)
		}
	}
}
