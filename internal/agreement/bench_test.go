package agreement

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// longCSV generates a long-form file of items × raters rows, values 1-5
// loosely around a per-item truth, with about 5% missing values.
func longCSV(items, raters int) []byte {
	rng := rand.New(rand.NewPCG(1, 1))
	var b bytes.Buffer
	b.WriteString("item,rater,value\n")
	for i := range items {
		truth := 1 + rng.IntN(5)
		for j := range raters {
			fmt.Fprintf(&b, "item-%06d,rater-%d,", i, j)
			if rng.IntN(20) > 0 {
				v := max(1, min(5, truth+rng.IntN(3)-1))
				fmt.Fprintf(&b, "%d", v)
			}
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// BenchmarkReadSummarize is the CLI's whole path over 300,000 rows
// (100,000 items × 3 raters): parse, aggregate, every statistic. The target
// is under one second.
func BenchmarkReadSummarize(b *testing.B) {
	data := longCSV(100_000, 3)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		r, err := ReadLongCSV(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		s, err := Summarize(r, Options{Level: Ordinal, Weights: QuadraticWeights})
		if err != nil {
			b.Fatal(err)
		}
		if !s.KrippendorffAlpha.Defined {
			b.Fatal(s.KrippendorffAlpha.Reason)
		}
	}
}

// BenchmarkBootstrapUnits is 1000 replicates of five multi-rater statistics
// over 100,000 items, as a report with intervals would run them.
func BenchmarkBootstrapUnits(b *testing.B) {
	r, err := ReadLongCSV(bytes.NewReader(longCSV(100_000, 3)))
	if err != nil {
		b.Fatal(err)
	}
	u, err := r.Units(likert(b))
	if err != nil {
		b.Fatal(err)
	}
	cfg := Bootstrap{Replicates: 1000, Level: 0.95, Seed: 1}
	for b.Loop() {
		_, err := BootstrapUnits(u, cfg, PercentAgreement, GwetAC1,
			func(u Units) Estimate { return KrippendorffAlpha(u, Ordinal) },
			func(u Units) Estimate { return FleissKappa(u, NoWeights) },
			func(u Units) Estimate { return GwetAC2(u, QuadraticWeights) })
		if err != nil {
			b.Fatal(err)
		}
	}
}
