package judge

import (
	"testing"

	"github.com/attune/attune/internal/rubric"
)

func TestConfidence(t *testing.T) {
	for _, c := range []struct {
		name    string
		value   string
		dist    map[string]float64
		samples []string
		want    float64
		ok      bool
	}{
		{"distribution", "YES", map[string]float64{"YES": 0.9, "NO": 0.1}, []string{"NO", "NO"}, 0.9, true},
		{"renormalised", "4", map[string]float64{"4": 0.3, "5": 0.1}, nil, 0.75, true},
		{"answer outside it", "NO", map[string]float64{"YES": 1}, nil, 0, true},
		{"samples", "NO", nil, []string{"NO", "YES", "NO", "ERROR"}, 2.0 / 3, true},
		{"one sample", "NO", nil, []string{"NO"}, 0, false},
		{"nothing", "NO", nil, nil, 0, false},
	} {
		got, ok := Confidence(rubric.Value(c.value), c.dist, c.samples)
		if ok != c.ok || (ok && (got-c.want > 1e-12 || c.want-got > 1e-12)) {
			t.Errorf("%s: %v %v, want %v %v", c.name, got, ok, c.want, c.ok)
		}
	}
}
