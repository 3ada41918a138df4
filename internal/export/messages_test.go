package export

import (
	"bytes"
	"testing"
)

// slowMessages encodes b the way every dialogue was encoded before the
// canonical copy: parsed, then each string written again.
func slowMessages(t testing.TB, b []byte) ([]byte, bool) {
	var p messageParser
	msgs, err := p.parse(b)
	if err != nil {
		return nil, false
	}
	rb := &recordBuilder{msgs: msgs}
	return rb.appendMessages(nil), true
}

func TestCanonicalMessagesCopy(t *testing.T) {
	for _, tc := range []struct {
		in     string
		copied bool
	}{
		{`[]`, true},
		{`[{"role": "user", "content": "hi"}]`, true},
		{`[{"role": "user", "content": "a \"b\" \\ c\nd\re\tf “job” é / <&>"}, {"role": "assistant", "content": ""}]`, true},
		// Escapes the export writes otherwise, and U+2028, go through the parser.
		{`[{"role": "user", "content": "bell\b feed\f"}]`, false},
		{`[{"role": "user", "content": "\u001f \u0000"}]`, false},
		{`[{"role": "user", "content": "a\/b"}]`, false},
		{"[{\"role\": \"user\", \"content\": \"line\u2028sep\u2029\"}]", false},
		// Not PostgreSQL's layout, other keys, other order.
		{`[{"role":"user","content":"hi"}]`, false},
		{`[{"content": "x", "role": "assistant"}]`, false},
		{`[{"role": "user"}]`, false},
		{`[{"role": "user", "content": "hi", "name": "x"}]`, false},
		{`[{"role": "user", "content": "hi"},{"role": "user", "content": "hi"}]`, false},
		{`[{"role": "user", "content": "hi"}] `, false},
		{"[{\"role\": \"user\", \"content\": \"\xff\"}]", false},
		{"[{\"role\": \"user\", \"content\": \"raw\ttab\"}]", false},
		{`[{"role": "user", "content": "unterminated}]`, false},
	} {
		got, ok := appendCanonicalMessages([]byte("x"), []byte(tc.in))
		if ok != tc.copied {
			t.Errorf("%q: copied %v, want %v", tc.in, ok, tc.copied)
			continue
		}
		if !ok {
			continue
		}
		want, parsed := slowMessages(t, []byte(tc.in))
		if !parsed || string(got) != "x"+string(want) {
			t.Errorf("%q: copied as %q, the parser gives %q (%v)", tc.in, got, want, parsed)
		}
	}
}

// FuzzCanonicalMessages holds the canonical copy to the parser: whatever
// it copies, the parser must accept and encode to the same bytes.
func FuzzCanonicalMessages(f *testing.F) {
	for _, s := range []string{
		`[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "a\nb\"c\\"}]`,
		`[{"role": "user", "content": "\b\u0001 é"}]`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := appendCanonicalMessages(nil, b)
		if !ok {
			return
		}
		want, parsed := slowMessages(t, b)
		if !parsed || string(got) != string(want) {
			t.Fatalf("%q: copied as %q, the parser gives %q (%v)", b, got, want, parsed)
		}
	})
}

// plainRunEndByByte is plainRunEnd one byte at a time, as it was written
// before.
func plainRunEndByByte(b []byte, i int) int {
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// TestPlainRunEnd puts each byte value at each place of runs of several
// lengths around the eight-byte words, after plain bytes of both halves
// of the byte range, and from every start.
func TestPlainRunEnd(t *testing.T) {
	for _, fill := range []byte{'a', 0x20, 0x7f, 0x80, 0xe2, 0xff} {
		for n := range 19 {
			for at := range n {
				for c := range 256 {
					b := bytes.Repeat([]byte{fill}, n)
					b[at] = byte(c)
					for i := 0; i <= n; i++ {
						if got, want := plainRunEnd(b, i), plainRunEndByByte(b, i); got != want {
							t.Fatalf("%q from %d: %d, want %d", b, i, got, want)
						}
					}
				}
			}
		}
	}
}

func FuzzPlainRunEnd(f *testing.F) {
	f.Add([]byte(`plain text, then "a quote`), 0)
	f.Add([]byte("a long run of letters\x1f\\\""), 3)
	f.Fuzz(func(t *testing.T, b []byte, i int) {
		if i < 0 || i > len(b) {
			return
		}
		if got, want := plainRunEnd(b, i), plainRunEndByByte(b, i); got != want {
			t.Fatalf("%q from %d: %d, want %d", b, i, got, want)
		}
	})
}
