package agreement

import (
	"hash/fnv"
	"math"
	"slices"
	"testing"
)

// The replicates are BootstrapItemGroups' resamples, in its order: every
// resample BootstrapItemReplicates evaluates is one BootstrapItemGroups
// evaluates for the same n and seed, in the same sequence, and the value
// of each replicate is the statistic on that resample (NaN where it is
// undefined).
func TestBootstrapItemReplicatesAreTheGroupsResamples(t *testing.T) {
	t.Parallel()
	const n, reps = 37, 150
	b := Bootstrap{Replicates: reps, Level: 0.9, Seed: 7}
	hash := func(w []int) uint64 {
		h := fnv.New64a()
		for _, x := range w {
			h.Write([]byte{byte(x), byte(x >> 8)})
		}
		return h.Sum64()
	}
	// Statistic 0 is the weight on item 0 (undefined when 0), statistic 1
	// the weighted mean of the items' indices.
	recorder := func(seen *[]uint64) ItemStats {
		return ItemStats{N: 2, Eval: func(w []int, out []Estimate) {
			*seen = append(*seen, hash(w))
			out[0] = Estimate{Reason: "absent"}
			if len(w) > 0 && w[0] > 0 {
				out[0] = Estimate{Value: float64(w[0]), Defined: true}
			}
			var sum, m float64
			for i, x := range w {
				sum += float64(i * x)
				m += float64(x)
			}
			out[1] = Estimate{Reason: "no items"}
			if m > 0 {
				out[1] = Estimate{Value: sum / m, Defined: true}
			}
		}}
	}
	var fromGroups, fromReps, other []uint64
	if _, err := BootstrapItemGroups(n, b, 2, recorder(&fromGroups), recorder(&other)); err != nil {
		t.Fatal(err)
	}
	full, got, err := BootstrapItemReplicates(n, b, 2, recorder(&fromReps), recorder(&other))
	if err != nil {
		t.Fatal(err)
	}
	if len(fromReps) != reps+1 || len(got[0]) != reps {
		t.Fatalf("%d evaluations and %d replicates, want %d and %d", len(fromReps), len(got[0]), reps+1, reps)
	}
	ones := make([]int, n)
	for i := range ones {
		ones[i] = 1
	}
	if fromReps[0] != hash(ones) || !full[0][0].Defined || full[0][0].Value != 1 || full[0][0].CI != nil {
		t.Errorf("the data's figure %+v, first evaluation not on the data", full[0][0])
	}
	// A subsequence of the groups' evaluations, which may evaluate more
	// (the data, and whatever else their interval needs).
	j := 0
	for _, h := range fromGroups {
		if j < len(fromReps)-1 && h == fromReps[1+j] {
			j++
		}
	}
	if j != reps {
		t.Errorf("only %d of %d replicates are BootstrapItemGroups' resamples in its order", j, reps)
	}
	nan, distinct := 0, map[uint64]bool{}
	for r, row := range got[0] {
		distinct[fromReps[1+r]] = true
		if math.IsNaN(row[0]) {
			nan++
		} else if row[0] < 1 || row[0] != math.Trunc(row[0]) {
			t.Errorf("replicate %d: weight on item 0 = %v", r, row[0])
		}
		if !(row[1] >= 0 && row[1] <= n-1) {
			t.Errorf("replicate %d: mean index %v", r, row[1])
		}
	}
	// Item 0 is absent from a resample with probability (1-1/n)^n ≈ 0.37.
	if nan < 30 || nan > 80 || len(distinct) < reps-1 {
		t.Errorf("%d undefined replicates, %d distinct resamples of %d", nan, len(distinct), reps)
	}
	if !slices.Equal(got[1][5], got[0][5]) {
		t.Errorf("two equal groups differ on replicate 5: %v, %v", got[0][5], got[1][5])
	}
	if _, _, err := BootstrapItemReplicates(n, Bootstrap{Level: 0.95}, 1); err == nil {
		t.Error("no replicates: want an error")
	}
	full, got, err = BootstrapItemReplicates(0, b, 1, recorder(&other))
	if err != nil || len(got[0]) != reps || !math.IsNaN(got[0][0][1]) || full[0][1].Defined {
		t.Errorf("no items: %v, %v, %v", full, got[0][0], err)
	}
}

// Quantiles of Student's t from published tables, symmetric about 0.
func TestStudentTQuantile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ p, df, want float64 }{
		{0.975, 1, 12.706204736},
		{0.975, 10, 2.228138852},
		{0.975, 99, 1.984216952},
		{0.995, 30, 2.749995654},
		{0.5, 7, 0},
		{0.975, 1000, 1.962339081},
		{0.025, 10, -2.228138852},
	} {
		if got := StudentTQuantile(c.p, c.df); math.Abs(got-c.want) > 1e-8 {
			t.Errorf("t quantile %v with %v df = %.10f, want %.10f", c.p, c.df, got, c.want)
		}
	}
	if !math.IsNaN(StudentTQuantile(1, 3)) || !math.IsNaN(StudentTQuantile(0.9, 0)) {
		t.Error("p = 1 or df = 0: want NaN")
	}
}
