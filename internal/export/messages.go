package export

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// Message is one message of a dialogue as the dataset export reads it:
// byte slices into the stored JSON, or into a scratch buffer where the JSON
// had escapes, valid until the next parse.
type Message struct {
	Role    []byte
	Content []byte
}

// messageParser reads stored dialogues — a JSON array of {"role",
// "content"} objects, as PostgreSQL writes a jsonb value — without
// reflection, reusing its buffers: the dataset export reads a dialogue per
// item and must keep well over 100,000 items a second.
type messageParser struct {
	b       []byte
	i       int
	scratch []byte
	msgs    []Message
}

var errMessages = errors.New("messages: not a JSON array of objects with string fields")

// parse returns the messages of the JSON array b. Fields other than role
// and content are skipped when they are strings and refused otherwise
// (the importer stores only those two).
func (p *messageParser) parse(b []byte) ([]Message, error) {
	p.b, p.i, p.scratch, p.msgs = b, 0, p.scratch[:0], p.msgs[:0]
	// Escaped strings are unquoted into scratch; it must not move while
	// messages point into it, so it is sized for the whole input first.
	if cap(p.scratch) < len(b) {
		p.scratch = make([]byte, 0, len(b))
	}
	if !p.expect('[') {
		return nil, errMessages
	}
	if p.peek() == ']' {
		p.i++
		return p.msgs, p.end()
	}
	for {
		m, err := p.object()
		if err != nil {
			return nil, err
		}
		p.msgs = append(p.msgs, m)
		switch p.next() {
		case ',':
			continue
		case ']':
			return p.msgs, p.end()
		}
		return nil, errMessages
	}
}

func (p *messageParser) end() error {
	p.ws()
	if p.i != len(p.b) {
		return errMessages
	}
	return nil
}

func (p *messageParser) object() (Message, error) {
	var m Message
	if !p.expect('{') {
		return m, errMessages
	}
	if p.peek() == '}' {
		p.i++
		return m, nil
	}
	for {
		p.ws()
		key, err := p.str()
		if err != nil {
			return m, err
		}
		if !p.expect(':') {
			return m, errMessages
		}
		p.ws()
		val, err := p.str()
		if err != nil {
			return m, err
		}
		switch string(key) {
		case "role":
			m.Role = val
		case "content":
			m.Content = val
		}
		switch p.next() {
		case ',':
			continue
		case '}':
			return m, nil
		}
		return m, errMessages
	}
}

func (p *messageParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *messageParser) peek() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func (p *messageParser) next() byte {
	c := p.peek()
	if c != 0 {
		p.i++
	}
	return c
}

func (p *messageParser) expect(c byte) bool { return p.next() == c }

// EachAnswer hands fn each key and value of obj, a JSON object of strings:
// a stored copy of an answer set's answers or an item's gold, as
// PostgreSQL's json_object_agg writes it. It reads the strings as the
// dialogues are read. The byte slices are valid only during the call.
func EachAnswer(obj []byte, fn func(key, value []byte)) error {
	p := messageParser{b: obj}
	if !p.expect('{') {
		return p.notAnswers()
	}
	if p.peek() == '}' {
		p.i++
		return p.answersEnd()
	}
	for {
		p.ws()
		key, err := p.str()
		if err != nil || !p.expect(':') {
			return p.notAnswers()
		}
		p.ws()
		value, err := p.str()
		if err != nil {
			return p.notAnswers()
		}
		fn(key, value)
		switch p.next() {
		case ',':
			continue
		case '}':
			return p.answersEnd()
		}
		return p.notAnswers()
	}
}

func (p *messageParser) answersEnd() error {
	if p.end() != nil {
		return p.notAnswers()
	}
	return nil
}

func (p *messageParser) notAnswers() error {
	return fmt.Errorf("export: stored answers are not a JSON object of strings at byte %d: %.80q", p.i, p.b)
}

// str reads a JSON string at p.i: a slice of the input when it has no
// escapes, else its unquoted text appended to scratch.
func (p *messageParser) str() ([]byte, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, errMessages
	}
	p.i++
	start := p.i
	p.i = plainRunEnd(p.b, p.i)
	if p.i >= len(p.b) {
		return nil, errMessages
	}
	switch p.b[p.i] {
	case '"':
		s := p.b[start:p.i]
		p.i++
		return s, nil
	case '\\':
		return p.escaped(start)
	}
	return nil, errMessages // a control byte
}

// plainRunEnd returns the index of the first byte of b at or after i that
// a JSON string cannot hold as it is (a quote, a backslash or a control
// byte), or len(b). It tests eight bytes at a time: dialogues are most of
// what the dataset export reads, a byte at a time was a tenth of its time.
func plainRunEnd(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, s := x^(ones*'"'), x^(ones*'\\')
		// A byte's high bit is set where the byte is zero (or, for the
		// last term, below 0x20); a borrow can set it above the first such
		// byte, never below, so the lowest set bit marks the first one.
		if m := ((q - ones) &^ q) | ((s - ones) &^ s) | ((x - ones*0x20) &^ x); m&highs != 0 {
			return i + bits.TrailingZeros64(m&highs)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

func (p *messageParser) escaped(start int) ([]byte, error) {
	from := len(p.scratch)
	out := append(p.scratch, p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			p.scratch = out
			return out[from:len(out):len(out)], nil
		case c < 0x20:
			return nil, errMessages
		case c != '\\':
			// Copy the run up to the next quote, escape or control byte.
			j := plainRunEnd(p.b, p.i+1)
			out = append(out, p.b[p.i:j]...)
			p.i = j
			continue
		}
		if p.i+1 >= len(p.b) {
			return nil, errMessages
		}
		e := p.b[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return nil, errMessages
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if p.i+1 < len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
					save := p.i
					p.i += 2
					if r2, ok = p.hex4(); !ok {
						return nil, errMessages
					}
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
					} else {
						p.i, r = save, utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, fmt.Errorf("messages: bad escape \\%c", e)
		}
	}
	return nil, errMessages
}

func (p *messageParser) hex4() (rune, bool) {
	if p.i+4 > len(p.b) {
		return 0, false
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c - 'a' + 10)
		case 'A' <= c && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	p.i += 4
	return r, true
}

// appendCanonicalMessages appends the dialogue b as the dataset export
// writes it ([{"role":…,"content":…},…]) straight from the stored text, and
// reports whether it could: b must be exactly as PostgreSQL writes a jsonb
// array of {"role", "content"} objects (keys in that order, ", " and ": "
// between tokens) and its strings must use only the escapes the export
// writes itself (\" \\ \n \r \t). Such a string is copied as it is: decoding
// it and encoding it again would give the same bytes. Anything else is left
// to the parser, whose output this equals byte for byte; on false, out's
// contents past its length are garbage and out must be used as it was.
func appendCanonicalMessages(out, b []byte) ([]byte, bool) {
	if len(b) < 2 || b[0] != '[' || b[len(b)-1] != ']' || !utf8.Valid(b) {
		return out, false
	}
	out = append(out, '[')
	i := 1
	if len(b) == 2 {
		return append(out, ']'), true
	}
	for {
		if !hasPrefixAt(b, i, `{"role": `) {
			return out, false
		}
		out = append(out, `{"role":`...)
		var ok bool
		if out, i, ok = appendCanonicalString(out, b, i+len(`{"role": `)); !ok {
			return out, false
		}
		if !hasPrefixAt(b, i, `, "content": `) {
			return out, false
		}
		out = append(out, `,"content":`...)
		if out, i, ok = appendCanonicalString(out, b, i+len(`, "content": `)); !ok {
			return out, false
		}
		if i >= len(b) || b[i] != '}' {
			return out, false
		}
		out = append(out, '}')
		i++
		switch {
		case i == len(b)-1:
			return append(out, ']'), true
		case hasPrefixAt(b, i, ", "):
			out = append(out, ',')
			i += 2
		default:
			return out, false
		}
	}
}

func hasPrefixAt(b []byte, i int, prefix string) bool {
	return i+len(prefix) <= len(b) && string(b[i:i+len(prefix)]) == prefix
}

// appendCanonicalString copies the JSON string at b[i] to out when its
// bytes are those appendJSONString would write for its text; b is valid
// UTF-8. It returns the index past the closing quote.
func appendCanonicalString(out, b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return out, i, false
	}
	start := i
	i++
	for i < len(b) {
		j := plainRunEnd(b, i)
		// U+2028 and U+2029 are written escaped. b is valid UTF-8, so a
		// character's bytes never straddle the run's end.
		for run := b[i:j]; ; {
			k := bytes.IndexByte(run, 0xE2)
			if k < 0 {
				break
			}
			if k+2 < len(run) && run[k+1] == 0x80 && (run[k+2] == 0xA8 || run[k+2] == 0xA9) {
				return out, i, false
			}
			run = run[k+1:]
		}
		if i = j; i >= len(b) {
			break
		}
		switch c := b[i]; {
		case c == '"':
			i++
			return append(out, b[start:i]...), i, true
		case c == '\\':
			if i+1 >= len(b) {
				return out, i, false
			}
			switch b[i+1] {
			case '"', '\\', 'n', 'r', 't':
				i += 2
			default:
				return out, i, false
			}
		default: // a control byte
			return out, i, false
		}
	}
	return out, i, false
}
