package rubric_test

import (
	"slices"
	"testing"
)

func TestInGate(t *testing.T) {
	coaching := builtin(t, "coaching-conversation@2.0")
	likert := builtin(t, "empathetic-dialogue@2")
	for _, c := range []struct {
		ref, key string
		want     bool
	}{
		{"coaching", "CQ8", true},
		{"coaching", "CQ9", true},
		{"coaching", "CQ1", false},
		{"coaching", "CP2", false}, // NA is invalid there, but it is no gate item
		{"coaching", "nope", false},
		{"coaching", "", false},
		{"likert", "safety", false}, // a likert rubric has no gate
		{"likert", "emotion", false},
	} {
		d := coaching
		if c.ref == "likert" {
			d = likert
		}
		if got := d.InGate(c.key); got != c.want {
			t.Errorf("%s InGate(%q) = %v, want %v", c.ref, c.key, got, c.want)
		}
	}
}

func TestGateFirst(t *testing.T) {
	d := builtin(t, "coaching-conversation@2.0")
	for _, c := range []struct {
		in, want []string
	}{
		{nil, []string{}},
		{[]string{"CQ1", "CQ2"}, []string{"CQ1", "CQ2"}},
		{[]string{"CQ1", "CQ9", "CQ2", "CQ8"}, []string{"CQ9", "CQ8", "CQ1", "CQ2"}},
		{[]string{"CQ8", "CQ9", "CP1"}, []string{"CQ8", "CQ9", "CP1"}},
	} {
		if got := d.GateFirst(c.in); !slices.Equal(got, c.want) {
			t.Errorf("GateFirst(%v) = %v, want %v", c.in, got, c.want)
		}
	}
	var keys []string
	for _, it := range d.Items {
		keys = append(keys, it.Key)
	}
	if got := d.GateFirst(keys); !slices.Equal(got[:2], []string{"CQ8", "CQ9"}) || len(got) != 12 {
		t.Errorf("the coaching rubric's items gate first: %v", got)
	}
}
