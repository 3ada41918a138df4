package fakellm

import (
	"hash/fnv"
	"time"
)

// Prefix caching, simulated roughly as OpenAI describes its own: prompts
// of at least 1024 tokens are cached in steps of 128 tokens, and a prefix
// stays cached for a few minutes after its last use. With four bytes a
// token, that is steps of 512 bytes from 4096. Anthropic's explicit cache
// uses the same minimum and lifetime.
const (
	cacheStep = 512
	cacheMin  = 4096
	cacheTTL  = 5 * time.Minute
)

// prefixCache remembers hashes of prompt prefixes and when they were last
// used. The Server's mutex guards it.
type prefixCache struct {
	seen  map[uint64]time.Time
	calls int
}

// use returns how many leading bytes of text were cached (0 if none), and
// caches every step of text. The key of a step hashes the whole prefix up
// to it, so a step seen before means that whole prefix was seen before.
func (c *prefixCache) use(text string, now time.Time) int {
	c.prune(now)
	h := fnv.New64a()
	cached := 0
	for end := cacheStep; end <= len(text); end += cacheStep {
		h.Write([]byte(text[end-cacheStep : end]))
		if end < cacheMin {
			continue
		}
		key := h.Sum64()
		if t, ok := c.seen[key]; ok && now.Sub(t) < cacheTTL {
			cached = end
		}
		c.seen[key] = now
	}
	return cached
}

// mark handles an explicitly marked prefix (Anthropic's cache_control):
// it returns whether the prefix was read from the cache (true) or written
// to it (false). A prefix under the minimum is neither, and ok is false.
func (c *prefixCache) mark(prefix string, now time.Time) (read, ok bool) {
	if len(prefix) < cacheMin {
		return false, false
	}
	c.prune(now)
	key := promptHash("explicit", prefix)
	t, seen := c.seen[key]
	c.seen[key] = now
	return seen && now.Sub(t) < cacheTTL, true
}

// prune drops expired entries every 256 calls, which keeps the map to
// what the last few minutes used.
func (c *prefixCache) prune(now time.Time) {
	c.calls++
	if c.calls%256 != 0 {
		return
	}
	for k, t := range c.seen {
		if now.Sub(t) >= cacheTTL {
			delete(c.seen, k)
		}
	}
}
