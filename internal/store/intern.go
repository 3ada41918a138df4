package store

// interner keeps one string of each value read from a large stream (rubric
// item keys, answers, system names repeat on every row), so that reading
// millions of rows allocates once per distinct value, not once per row.
type interner map[string]string

// of returns the kept string equal to b, keeping a new one the first time.
// The lookup by string(b) does not allocate.
func (in interner) of(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}
