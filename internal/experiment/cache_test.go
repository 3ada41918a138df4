package experiment

import (
	"maps"
	"reflect"
	"testing"
)

// The cache gives back the result of an equal input without computing it
// again, and computes afresh for an input that differs in anything Run
// reads: one answer, a gold answer, an item, an option.
func TestCacheKeysOnTheWholeInput(t *testing.T) {
	t.Parallel()
	in := randomInput(t, 60, 3, 50, 10, 9)
	c := NewCache(4)
	first, err := c.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.Run(in); err != nil || again != first {
		t.Fatalf("an equal input was computed again (%v)", err)
	}
	changed := func(edit func(in *Input)) Input {
		out := in
		out.Items = append([]Item(nil), in.Items...)
		for i, it := range out.Items {
			it.Gold = maps.Clone(it.Gold)
			it.Variants = append([]map[string]string(nil), it.Variants...)
			for v := range it.Variants {
				it.Variants[v] = maps.Clone(it.Variants[v])
			}
			it.Humans = append([]map[string]string(nil), it.Humans...)
			out.Items[i] = it
		}
		edit(&out)
		return out
	}
	flip := func(m map[string]string) {
		if m["CQ1"] == "YES" {
			m["CQ1"] = "NO"
		} else {
			m["CQ1"] = "YES"
		}
	}
	for name, edit := range map[string]func(in *Input){
		"a variant's answer": func(in *Input) {
			for _, it := range in.Items {
				if it.Variants[1] != nil {
					flip(it.Variants[1])
					return
				}
			}
		},
		"a gold answer": func(in *Input) {
			for _, it := range in.Items {
				if it.Gold != nil {
					flip(it.Gold)
					return
				}
			}
		},
		"an answer withdrawn": func(in *Input) {
			for _, it := range in.Items {
				if _, ok := it.Variants[0]["CQ2"]; ok {
					delete(it.Variants[0], "CQ2")
					return
				}
			}
		},
		"an item more": func(in *Input) { in.Items = append(in.Items, in.Items[0]); in.Items[len(in.Items)-1].ID = 1000 },
		"seed":         func(in *Input) { in.Bootstrap.Seed++ },
	} {
		other := changed(edit)
		got, err := c.Run(other)
		if err != nil {
			t.Fatal(err)
		}
		want, err := Run(other)
		if err != nil {
			t.Fatal(err)
		}
		if got == first || !reflect.DeepEqual(got, want) {
			t.Errorf("%s changed: the cache gave the earlier result or another than Run's", name)
		}
		if reflect.DeepEqual(want, first) {
			t.Errorf("%s changed: the case changes no figure, so it proves nothing", name)
		}
	}
}
