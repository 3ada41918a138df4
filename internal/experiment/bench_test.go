package experiment

import (
	"math/rand/v2"
	"testing"

	"github.com/attune/attune/internal/agreement"
	"github.com/attune/attune/internal/rubric"
)

// BenchmarkRun is the experiment page: 5 variants × 2,000 gold
// items × the coaching rubric's 12 criteria, with 1,000 paired replicates.
func BenchmarkRun(b *testing.B) {
	def, err := rubric.Builtin("coaching-conversation@2.0")
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	answer := func() map[string]string {
		m := map[string]string{}
		for _, it := range def.Items {
			vs := def.Allowed(&it)
			m[it.Key] = string(vs[rng.IntN(len(vs))])
		}
		return m
	}
	var items []Item
	for i := range 2000 {
		it := Item{ID: int64(i + 1), Gold: answer(), Humans: []map[string]string{answer(), answer(), answer()}}
		for range 5 {
			it.Variants = append(it.Variants, answer())
		}
		items = append(items, it)
	}
	in := Input{Def: def, Variants: []string{"a", "b", "c", "d", "e"}, Humans: []string{"h1", "h2", "h3"}, Items: items,
		Bootstrap: agreement.Bootstrap{Replicates: 1000, Level: 0.95, Seed: 1}}
	for b.Loop() {
		if _, err := Run(in); err != nil {
			b.Fatal(err)
		}
	}
}
