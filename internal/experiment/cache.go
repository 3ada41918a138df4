package experiment

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// Cache keeps the results of the last few experiments, each under a
// fingerprint of its whole input, so that a page viewed again is not
// computed again. A result is reused only for an input equal in all that
// Run reads — every answer of every item, the items' ids, the names, the
// usage, the rubric and the options — so a new label, gold answer or
// item makes a new key and never a stale result. Safe for concurrent
// use; the results it returns are shared and must not be modified.
type Cache struct {
	mu      sync.Mutex
	size    int
	entries []cacheEntry // the most recently used last
}

type cacheEntry struct {
	key [sha256.Size]byte
	res *Result
}

// NewCache returns a cache of the last size results (at least one).
func NewCache(size int) *Cache {
	return &Cache{size: max(1, size)}
}

// Run returns Run(in), computed now or earlier for an equal input.
func (c *Cache) Run(in Input) (*Result, error) {
	if in.Def == nil {
		return Run(in)
	}
	key := fingerprint(in)
	c.mu.Lock()
	for i, e := range c.entries {
		if e.key == key {
			c.entries = append(append(c.entries[:i:i], c.entries[i+1:]...), e)
			c.mu.Unlock()
			return e.res, nil
		}
	}
	c.mu.Unlock()
	res, err := Run(in)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) == c.size {
		c.entries = append(c.entries[:0], c.entries[1:]...)
	}
	c.entries = append(c.entries, cacheEntry{key: key, res: res})
	return res, nil
}

// fingerprint hashes everything Run reads of in. Strings are prefixed
// with their length, so that no two inputs write the same bytes.
func fingerprint(in Input) [sha256.Size]byte {
	h := sha256.New()
	var b []byte
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	num := func(x int64) { b = binary.AppendVarint(b, x) }
	flush := func() {
		if len(b) > 1<<15 {
			h.Write(b)
			b = b[:0]
		}
	}
	// A rubric version never changes once made; its reference names it.
	str(in.Def.Ref().String())
	num(int64(len(in.Def.Items)))
	for _, it := range in.Def.Items {
		str(it.Key)
	}
	// Options by their Go syntax, so that a field added later is part of
	// the key without anyone remembering to add it here.
	str(fmt.Sprintf("%#v", in.Bootstrap))
	for _, names := range [][]string{in.Variants, in.Humans} {
		num(int64(len(names)))
		for _, n := range names {
			str(n)
		}
	}
	num(int64(len(in.Usage)))
	for _, u := range in.Usage {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(u.CostUSD))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(u.LatencyMS))
		num(int64(u.Items))
	}
	answers := func(m map[string]string) {
		if m == nil {
			num(-1)
			return
		}
		// The rubric's items in its order; any other key only counts.
		num(int64(len(m)))
		for _, it := range in.Def.Items {
			if v, ok := m[it.Key]; ok {
				b = append(b, 1)
				str(v)
			} else {
				b = append(b, 0)
			}
		}
	}
	num(int64(len(in.Items)))
	for _, it := range in.Items {
		num(it.ID)
		answers(it.Gold)
		num(int64(len(it.Humans)))
		for _, m := range it.Humans {
			answers(m)
		}
		num(int64(len(it.Variants)))
		for _, m := range it.Variants {
			answers(m)
		}
		flush()
	}
	h.Write(b)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
