package report

import (
	"errors"
	"hash/fnv"

	"github.com/attune/attune/internal/agreement"
)

// The report's intervals are agreement's: BootstrapUnits and
// BootstrapPairs resample the count patterns and table cells (in time
// that grows with the number of patterns, not of items) and give their
// MethodWideBCa intervals. What is left here is the report's own configuration: no
// replicates means no intervals, and every group of figures has its own
// seed.

// bootUnits computes stats on the units and, when b has replicates,
// attaches agreement.BootstrapUnits' interval to every defined one, the
// replicates drawn from seed, and withholds those too few items inform:
// reach[i] is stats[i]'s agreement.Reach.
func bootUnits(u agreement.Units, b agreement.Bootstrap, seed uint64, reach []agreement.Reach, stats ...func(agreement.Units) agreement.Estimate) []agreement.Estimate {
	if b.Replicates < 1 {
		out := make([]agreement.Estimate, len(stats))
		for i, f := range stats {
			out[i] = f(u)
		}
		return out
	}
	b.Seed = seed
	out, err := agreement.BootstrapUnits(u, b, stats...)
	if err != nil {
		// checkBootstrap refused every configuration agreement refuses.
		panic(err)
	}
	agreement.WithholdUnits(out, u, reach...)
	return out
}

// bootPairs is bootUnits for pairwise statistics
// (agreement.BootstrapPairs).
func bootPairs(c agreement.Contingency, b agreement.Bootstrap, seed uint64, reach []agreement.Reach, stats ...func(agreement.Contingency) agreement.Estimate) []agreement.Estimate {
	if b.Replicates < 1 {
		out := make([]agreement.Estimate, len(stats))
		for i, f := range stats {
			out[i] = f(c)
		}
		return out
	}
	b.Seed = seed
	out, err := agreement.BootstrapPairs(c, b, stats...)
	if err != nil {
		panic(err) // as in bootUnits
	}
	agreement.WithholdPairs(out, c, reach...)
	return out
}

// checkBootstrap refuses a configuration agreement would refuse.
func checkBootstrap(b agreement.Bootstrap) error {
	if b.Replicates < 0 {
		return errors.New("report: negative number of bootstrap replicates")
	}
	if b.Replicates > 0 && !(b.Level > 0 && b.Level < 1) {
		return errors.New("report: bootstrap level must be strictly between 0 and 1")
	}
	return nil
}

// seedFor derives the seed of one group of statistics from the report's
// seed and the group's name, so that every interval is reproducible and
// no two groups share a stream of draws.
func seedFor(base uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return base ^ h.Sum64()
}
