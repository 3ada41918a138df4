package ppi

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
)

// drawStream is the PCG stream of every draw: a fixed constant, so that
// the seed alone reproduces a draw.
const drawStream = 0x617474756e652d64 // "attune-d"

// Drawn is a uniform random sample of ids and the seed that reproduces it.
type Drawn struct {
	IDs  []string `json:"ids"`
	Seed uint64   `json:"seed"`
}

// Draw picks k of ids uniformly at random without replacement: every
// subset of k ids is equally likely, and so is every order within it (IDs
// is in draw order). The same ids in the same order, k and seed give the
// same draw on every platform and Go release: the generator is PCG-DXSM
// from math/rand/v2, and the bounded integers are taken from its raw
// output here rather than through rand.Rand, whose methods do not promise
// a fixed sequence. Seed 0 asks for a fresh seed, which Drawn reports so
// the draw can be stored and repeated. ids must not repeat, and k must be
// in [0, len(ids)].
func Draw(ids []string, k int, seed uint64) (Drawn, error) {
	if k < 0 || k > len(ids) {
		return Drawn{}, fmt.Errorf("ppi: draw of %d items from %d", k, len(ids))
	}
	seen := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; dup {
			return Drawn{}, fmt.Errorf("ppi: item %q appears twice in the list to draw from", id)
		}
		seen[id] = struct{}{}
	}
	for seed == 0 {
		seed = rand.Uint64()
	}
	src := rand.NewPCG(seed, drawStream)
	// A partial Fisher–Yates shuffle over positions: the first k slots end
	// up a uniform sample in uniform order.
	pos := make([]int, len(ids))
	for i := range pos {
		pos[i] = i
	}
	out := make([]string, k)
	for i := range k {
		j := i + int(below(src, uint64(len(ids)-i)))
		pos[i], pos[j] = pos[j], pos[i]
		out[i] = ids[pos[i]]
	}
	return Drawn{IDs: out, Seed: seed}, nil
}

// below returns a uniform integer in [0, n), n > 0, by Lemire's
// multiply-and-reject method, which has no modulo bias.
func below(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}
