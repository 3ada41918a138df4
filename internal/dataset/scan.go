package dataset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// errSyntax means the line is not valid JSON. The scanner does not say
// why: the caller asks encoding/json, so that messages about broken JSON
// read as the standard library words them. The fuzz test holds the two to
// the same verdict.
var errSyntax = errors.New("dataset: invalid JSON")

// maxDepth is encoding/json's limit on nesting, so that both refuse the
// same lines.
const maxDepth = 10000

// dupKeyError is an object in meta with one key twice: encoding/json would
// keep the last silently, and the canonical form needs each key once.
type dupKeyError struct{ key []byte }

func (e *dupKeyError) Error() string { return "key " + quote(e.key) + " appears twice in one object" }

// errNUL is a string in meta holding \u0000, which PostgreSQL cannot
// store in jsonb.
var errNUL = errors.New("contains a NUL character (\\u0000), which cannot be stored")

// member is one "key":value of an object being written canonically, as
// offsets into the output: the member is out[start:end], its quoted key
// out[start:keyEnd].
type member struct{ start, keyEnd, end int }

// scanner reads one JSON text held in memory. The text is valid UTF-8
// (checked before), so the scanner looks only at JSON's syntax.
type scanner struct {
	b  []byte
	i  int
	rd *reader // scratch for canonical objects
	// problem is the first thing canon found that is valid JSON but cannot
	// be stored (a key twice, a NUL); canon reads on past it so that the
	// rest of the line is still checked.
	problem error
	// noSort makes canon only check syntax: for values that are read past,
	// not kept.
	noSort bool
	// deepest, when not 0, is the deepest nesting canon accepts before it
	// records errDeep: rewriting an object in key order copies it once per
	// level, so unbounded nesting would cost time in the square of it.
	deepest int
}

// maxMetaDepth is how deep meta may nest, meta itself counting as 1.
const maxMetaDepth = 100

var errDeep = fmt.Errorf("nested more than %d levels deep", maxMetaDepth)

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// expect consumes c, after optional white space.
func (s *scanner) expect(c byte) error {
	s.ws()
	if s.peek() != c {
		return errSyntax
	}
	s.i++
	return nil
}

// plain marks the bytes a string can hold without an escape: not a control
// character, not a quote, not a backslash.
var plain = func() (t [256]bool) {
	for c := range t {
		t[c] = c >= 0x20 && c != '"' && c != '\\'
	}
	return t
}()

// str reads the string at s.i and appends its decoded bytes to dst. Escapes
// decode as encoding/json decodes them: a lone surrogate becomes U+FFFD.
func (s *scanner) str(dst []byte) ([]byte, error) {
	if s.peek() != '"' {
		return dst, errSyntax
	}
	i := s.i + 1
	start := i
	for {
		i = plainRun(s.b, i)
		if i >= len(s.b) {
			return dst, errSyntax
		}
		switch c := s.b[i]; {
		case c == '"':
			dst = append(dst, s.b[start:i]...)
			s.i = i + 1
			return dst, nil
		case c < 0x20:
			return dst, errSyntax
		}
		// A backslash.
		dst = append(dst, s.b[start:i]...)
		if i+1 >= len(s.b) {
			return dst, errSyntax
		}
		switch e := s.b[i+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
			i += 2
		case 'b':
			dst = append(dst, '\b')
			i += 2
		case 'f':
			dst = append(dst, '\f')
			i += 2
		case 'n':
			dst = append(dst, '\n')
			i += 2
		case 'r':
			dst = append(dst, '\r')
			i += 2
		case 't':
			dst = append(dst, '\t')
			i += 2
		case 'u':
			r := hex4(s.b[i+2:])
			if r < 0 {
				return dst, errSyntax
			}
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+1 < len(s.b) && s.b[i] == '\\' && s.b[i+1] == 'u' {
					r2 = hex4(s.b[i+2:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, errSyntax
		}
		start = i
	}
}

// plainRun returns the index of the first byte from i on that a string
// cannot hold unescaped (a quote, a backslash or a control character), or
// len(b). Message text is long and mostly plain, so it tests eight bytes at
// a time.
func plainRun(b []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q := x ^ (ones * '"')
		bs := x ^ (ones * '\\')
		// A byte's high bit is set where it is below 0x20, or equals the
		// quote or the backslash (a zero after the xor). Borrows can only
		// mark bytes after a real one, which the byte loop below sorts out.
		if ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs != 0 {
			break
		}
	}
	for i < len(b) && plain[b[i]] {
		i++
	}
	return i
}

// hex4 parses four hex digits, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// number reads the number at s.i and returns its literal and whether it is
// an integer (no fraction, no exponent).
func (s *scanner) number() (lit []byte, integer bool, err error) {
	start := s.i
	i := s.i
	if i < len(s.b) && s.b[i] == '-' {
		i++
	}
	switch {
	case i < len(s.b) && s.b[i] == '0':
		i++
	case i < len(s.b) && '1' <= s.b[i] && s.b[i] <= '9':
		for i < len(s.b) && isDigit(s.b[i]) {
			i++
		}
	default:
		return nil, false, errSyntax
	}
	integer = true
	if i < len(s.b) && s.b[i] == '.' {
		integer = false
		i++
		if i >= len(s.b) || !isDigit(s.b[i]) {
			return nil, false, errSyntax
		}
		for i < len(s.b) && isDigit(s.b[i]) {
			i++
		}
	}
	if i < len(s.b) && (s.b[i] == 'e' || s.b[i] == 'E') {
		integer = false
		i++
		if i < len(s.b) && (s.b[i] == '+' || s.b[i] == '-') {
			i++
		}
		if i >= len(s.b) || !isDigit(s.b[i]) {
			return nil, false, errSyntax
		}
		for i < len(s.b) && isDigit(s.b[i]) {
			i++
		}
	}
	s.i = i
	return s.b[start:i], integer, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// literal reads true, false or null.
func (s *scanner) literal(word string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return errSyntax
	}
	s.i += len(word)
	return nil
}

// typeName names the JSON type of the value starting with c, for messages.
func typeName(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// canon reads the value at s.i, which sits at nesting level depth if it is
// an object or array, and appends its canonical form to dst: no
// insignificant space, object keys sorted by their canonical bytes, strings
// re-escaped by appendString, numbers as written. Two texts that mean the
// same JSON (apart from number spelling) give the same bytes.
func (s *scanner) canon(dst []byte, depth int) ([]byte, error) {
	s.ws()
	var err error
	switch s.peek() {
	case '{':
		return s.canonObject(dst, depth)
	case '[':
		if depth > maxDepth {
			return dst, errSyntax
		}
		s.checkDeep(depth)
		s.i++
		dst = append(dst, '[')
		s.ws()
		if s.peek() == ']' {
			s.i++
			return append(dst, ']'), nil
		}
		for {
			if dst, err = s.canon(dst, depth+1); err != nil {
				return dst, err
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
				dst = append(dst, ',')
			case ']':
				s.i++
				return append(dst, ']'), nil
			default:
				return dst, errSyntax
			}
		}
	case '"':
		start := len(dst)
		dst, err = s.str(dst)
		if err != nil {
			return dst, err
		}
		// Decode in place, then write the canonical escape of it.
		s.rd.tmp = append(s.rd.tmp[:0], dst[start:]...)
		if hasNUL(s.rd.tmp) && s.problem == nil {
			s.problem = errNUL
		}
		return appendString(dst[:start], s.rd.tmp), nil
	case 't':
		return append(dst, "true"...), s.literal("true")
	case 'f':
		return append(dst, "false"...), s.literal("false")
	case 'n':
		return append(dst, "null"...), s.literal("null")
	}
	lit, _, err := s.number()
	return append(dst, lit...), err
}

func (s *scanner) canonObject(dst []byte, depth int) ([]byte, error) {
	if depth > maxDepth {
		return dst, errSyntax
	}
	s.checkDeep(depth)
	s.i++ // {
	objStart := len(dst)
	dst = append(dst, '{')
	s.ws()
	if s.peek() == '}' {
		s.i++
		return append(dst, '}'), nil
	}
	base := len(s.rd.members)
	defer func() { s.rd.members = s.rd.members[:base] }()
	var err error
	for {
		s.ws()
		m := member{start: len(dst)}
		key := len(s.rd.key)
		s.rd.key, err = s.str(s.rd.key)
		if err != nil {
			return dst, err
		}
		// A key holds text as a value does: \u0000 in one is as
		// unstorable (PostgreSQL's jsonb refuses it).
		if hasNUL(s.rd.key[key:]) && s.problem == nil {
			s.problem = errNUL
		}
		dst = appendString(dst, s.rd.key[key:])
		s.rd.key = s.rd.key[:key]
		m.keyEnd = len(dst)
		if err := s.expect(':'); err != nil {
			return dst, err
		}
		dst = append(dst, ':')
		if dst, err = s.canon(dst, depth+1); err != nil {
			return dst, err
		}
		m.end = len(dst)
		s.rd.members = append(s.rd.members, m)
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			dst = append(dst, ',')
			continue
		case '}':
			s.i++
		default:
			return dst, errSyntax
		}
		break
	}
	if s.noSort || s.problem != nil {
		// Only read past, or refused already: order does not matter.
		return append(dst, '}'), nil
	}
	ms := s.rd.members[base:]
	byKey := func(a, b member) int { return bytes.Compare(dst[a.start:a.keyEnd], dst[b.start:b.keyEnd]) }
	sorted := slices.IsSortedFunc(ms, byKey)
	if !sorted {
		slices.SortFunc(ms, byKey)
	}
	for k := 1; k < len(ms); k++ {
		if byKey(ms[k-1], ms[k]) == 0 && s.problem == nil {
			s.problem = &dupKeyError{key: unquoteKey(dst[ms[k].start:ms[k].keyEnd])}
		}
	}
	if !sorted {
		// Rewrite the members in key order from a copy of the object.
		s.rd.tmp = append(s.rd.tmp[:0], dst[objStart:]...)
		dst = dst[:objStart+1]
		for k, m := range ms {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, s.rd.tmp[m.start-objStart:m.end-objStart]...)
		}
	}
	return append(dst, '}'), nil
}

func (s *scanner) checkDeep(depth int) {
	if s.deepest > 0 && depth > s.deepest && s.problem == nil {
		s.problem = errDeep
	}
}

// unquoteKey decodes a key written by appendString, for a message.
func unquoteKey(q []byte) []byte {
	s := scanner{b: q}
	out, err := s.str(nil)
	if err != nil {
		return q
	}
	return out
}

// appendString appends s, valid UTF-8, as a canonical JSON string: only
// the quote, the backslash and control characters are escaped, always the
// same way. Hashes are made of this form, so it never changes.
func appendString[S ~string | ~[]byte](dst []byte, s S) []byte {
	return appendEscaped(dst, s, &hashEscapes)
}

// appendStoredString appends s, valid UTF-8, as PostgreSQL's jsonb prints a
// string: as appendString does, but with \b and \f for backspace and form
// feed.
func appendStoredString[S ~string | ~[]byte](dst []byte, s S) []byte {
	return appendEscaped(dst, s, &storedEscapes)
}

// hashEscapes and storedEscapes give, for each control character, the
// letter of its two-character escape, or 0 where it is written \u00XX.
var (
	hashEscapes   = [0x20]byte{'\n': 'n', '\r': 'r', '\t': 't'}
	storedEscapes = [0x20]byte{'\b': 'b', '\f': 'f', '\n': 'n', '\r': 'r', '\t': 't'}
)

func appendEscaped[S ~string | ~[]byte](dst []byte, s S, short *[0x20]byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain[c] {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case short[c] != 0:
			dst = append(dst, '\\', short[c])
		default:
			const hex = "0123456789abcdef"
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
