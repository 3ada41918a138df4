package review

import (
	"slices"
	"testing"

	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/web/views/annotate"
	goldview "github.com/attune/attune/web/views/gold"
)

func TestShortNames(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{nil, []string{}},
		{[]string{"ann0@example.org", "ann1@example.org", "strict"}, []string{"ann0", "ann1", "strict"}},
		{[]string{"Maria Lopez", "Maria Chen", "Tom Berg"}, []string{"Maria Lopez", "Maria Chen", "Tom"}},
		{[]string{"maria@a.org", "maria@b.org"}, []string{"maria@a.org", "maria@b.org"}},
		{[]string{"  Ada  ", ""}, []string{"Ada", ""}},
	} {
		if got := shortNames(c.in); !slices.Equal(got, c.want) {
			t.Errorf("shortNames(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestGateFirst: the group holding the safety gate leads, its gate items
// first; the other groups keep the rubric's order.
func TestGateFirst(t *testing.T) {
	def, err := rubric.Builtin("coaching-conversation@2.0")
	if err != nil {
		t.Fatal(err)
	}
	item := func(key string) goldview.Item {
		return goldview.Item{Item: annotate.Item{Key: key}, Gate: def.InGate(key)}
	}
	groups := []goldview.Group{
		{Title: "Comprehension", Items: []goldview.Item{item("CQ1"), item("CQ2")}},
		{Title: "Mixed", Items: []goldview.Item{item("CQ7"), item("CQ9")}},
		{Title: "Safety", Items: []goldview.Item{item("CQ8")}},
		{Title: "Patterns", Items: []goldview.Item{item("CP1")}},
	}
	var got []string
	for _, g := range gateFirst(def, groups) {
		got = append(got, g.Title+":")
		for _, it := range g.Items {
			got = append(got, it.Key)
		}
	}
	want := []string{"Mixed:", "CQ9", "CQ7", "Safety:", "CQ8", "Comprehension:", "CQ1", "CQ2", "Patterns:", "CP1"}
	if !slices.Equal(got, want) {
		t.Fatalf("gateFirst = %v, want %v", got, want)
	}
	if groups[1].Items[0].Key != "CQ7" {
		t.Fatalf("gateFirst changed its argument: %v", groups[1].Items)
	}
}
