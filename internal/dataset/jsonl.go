package dataset

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// msg is one message of the item being read: its role and where its text
// sits in reader.text.
type msg struct {
	role       string
	start, end int
}

func (rd *reader) readJSONL() error {
	for {
		line, size, tooLong, ok, err := rd.nextLine()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		rd.sum.Lines++
		n := rd.sum.Lines
		if tooLong {
			rd.report(LineError{Line: n, Message: fmt.Sprintf("the line is %d bytes, over the limit of %s", size, bytesLimit(rd.opts.MaxLineBytes))})
			continue
		}
		if isBlank(line) {
			continue
		}
		if err := rd.parseLine(line, n); err != nil {
			return err
		}
	}
}

// other returns the list key that is not list.
func other(list string) string {
	if list == "messages" {
		return "turns"
	}
	return "messages"
}

// article names one element of list in a message: "a message's".
func article(list string) string {
	if list == "turns" {
		return "a turn's"
	}
	return "a message's"
}

// bytesLimit writes a byte limit for people: 1048576 bytes (1 MiB).
func bytesLimit(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d bytes (%d MiB)", n, n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d bytes (%d KiB)", n, n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// isBlank reports whether a line holds only spaces and tabs (a \r left by a
// CRLF line ending included).
func isBlank(line []byte) bool {
	for _, c := range line {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// nextLine returns the next line without its line ending; ok is false at
// the end of the input. The line is valid until the next call. A line over
// MaxLineBytes is not kept: nextLine skips the rest of it and returns
// tooLong and its size.
func (rd *reader) nextLine() (line []byte, size int, tooLong, ok bool, err error) {
	frag, err := rd.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// Longer than the buffer: gather it, up to the limit and the line
		// ending, and past that only count.
		limit := rd.opts.MaxLineBytes + 2
		rd.long = append(rd.long[:0], frag...)
		size = len(frag)
		for err == bufio.ErrBufferFull {
			frag, err = rd.br.ReadSlice('\n')
			size += len(frag)
			if !tooLong && len(rd.long)+len(frag) > limit {
				tooLong = true
				rd.long = rd.long[:0]
			}
			if !tooLong {
				rd.long = append(rd.long, frag...)
			}
		}
		if err != nil && err != io.EOF {
			return nil, 0, false, false, fmt.Errorf("dataset: read: %w", err)
		}
		if tooLong {
			return nil, size - (len(frag) - len(trimEOL(frag))), true, true, nil
		}
		frag = rd.long
	} else if err != nil && err != io.EOF {
		return nil, 0, false, false, fmt.Errorf("dataset: read: %w", err)
	}
	if len(frag) == 0 {
		return nil, 0, false, false, nil
	}
	line = trimEOL(frag)
	if len(line) > rd.opts.MaxLineBytes {
		return nil, len(line), true, true, nil
	}
	return line, len(line), false, true, nil
}

func trimEOL(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	return b
}

// invalidUTF8 returns the offset of the first byte that is not valid UTF-8,
// or -1. encoding/json would replace such bytes with U+FFFD without a word,
// so they are found before any decoding.
func invalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// jsonError explains why a line is not valid JSON, in encoding/json's words.
func jsonError(line []byte) string {
	var v json.RawMessage
	err := json.Unmarshal(line, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	if err != nil {
		return "invalid JSON: " + err.Error()
	}
	// The scanner and encoding/json disagree; the fuzz test looks for this.
	return "invalid JSON (the line is refused by attune's reader but not by encoding/json)"
}

// lineErr records a problem of the line being read.
func (rd *reader) lineErr(n int, field, message string) {
	rd.lineErrs = append(rd.lineErrs, LineError{Line: n, Field: field, Message: message})
}

// parseLine reads and checks the JSONL line numbered n and hands on the
// item or reports its problems. It returns only emit's error.
func (rd *reader) parseLine(line []byte, n int) error {
	if at := invalidUTF8(line); at >= 0 {
		rd.report(LineError{Line: n, Message: fmt.Sprintf("invalid UTF-8 at byte %d (0x%02x); save the file as UTF-8", at+1, line[at])})
		return nil
	}
	rd.lineErrs = rd.lineErrs[:0]
	it, err := rd.parseItem(line, n)
	if err == errSyntax {
		// Problems found before the syntax error are dropped: with broken
		// JSON they may not be problems at all.
		rd.report(LineError{Line: n, Message: jsonError(line)})
		return nil
	}
	for _, e := range rd.lineErrs {
		rd.report(e)
	}
	if len(rd.lineErrs) > 0 {
		return nil
	}
	return rd.add(it)
}

// parseItem reads the object on one line. It returns errSyntax for broken
// JSON; other problems it records with lineErr, returning a zero Item.
func (rd *reader) parseItem(line []byte, n int) (Item, error) {
	s := scanner{b: line, rd: rd}
	s.ws()
	if s.peek() != '{' {
		if !json.Valid(line) {
			return Item{}, errSyntax
		}
		rd.lineErr(n, "", "the line is "+typeName(s.peek())+", not an object; each line must be one JSON object with id and messages")
		return Item{}, nil
	}
	s.i++
	rd.text, rd.spans, rd.meta = rd.text[:0], rd.spans[:0], rd.meta[:0]
	var (
		id       []byte
		haveID   bool
		list     string // "messages" or "turns", whichever came first
		listOK   bool   // the list was read without problems
		haveMeta bool
		// The single-reply shape {"id", "user", "response"}: where each
		// text sits in rd.text, and whether it was read without problems.
		pair   [2]*msg
		pairOK = true
		extras []extra // top-level fields kept under meta
		err    error
	)
	s.ws()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			s.ws()
			if rd.key, err = s.str(rd.key[:0]); err != nil {
				return Item{}, err
			}
			if err := s.expect(':'); err != nil {
				return Item{}, err
			}
			s.ws()
			switch string(rd.key) {
			case "id":
				if haveID {
					rd.lineErr(n, "id", "given twice")
					err = rd.skip(&s)
					break
				}
				haveID = true
				id, err = rd.parseID(&s, n)
			case "messages", "turns":
				key := "messages" // a constant: no copy of rd.key
				if rd.key[0] == 't' {
					key = "turns"
				}
				if list != "" {
					if list == key {
						rd.lineErr(n, list, "given twice")
					} else {
						rd.lineErr(n, other(list), "given together with "+list+"; use one of them")
					}
					err = rd.skip(&s)
					break
				}
				list = key
				listOK, err = rd.parseMessages(&s, n, key)
			case "meta":
				if haveMeta {
					rd.lineErr(n, "meta", "given twice")
					err = rd.skip(&s)
					break
				}
				haveMeta = true
				err = rd.parseMeta(&s, n)
			case "user", "response":
				slot, role := 0, RoleUser
				if rd.key[0] == 'r' {
					slot, role = 1, RoleAssistant
				}
				name := string(rd.key)
				if pair[slot] != nil {
					rd.lineErr(n, name, "given twice")
					pairOK = false
					err = rd.skip(&s)
					break
				}
				if c := s.peek(); c != '"' {
					rd.lineErr(n, name, "must be a string, not "+typeName(c))
					pairOK = false
					err = rd.skip(&s)
					break
				}
				m := &msg{role: role, start: len(rd.text)}
				if rd.text, err = s.str(rd.text); err != nil {
					return Item{}, err
				}
				m.end = len(rd.text)
				pair[slot] = m
				if problem := checkText(rd.text[m.start:m.end]); problem != "" {
					rd.lineErr(n, name, problem)
					pairOK = false
				}
			default:
				// Real files carry extra fields beside the dialogue (a
				// source, a model name); they are kept under meta rather
				// than refused. A misspelt messages is still caught: the
				// dialogue is then missing.
				e := extra{key: string(rd.key)}
				if hasNUL(rd.key) {
					rd.lineErr(n, fieldName(rd.key), errNUL.Error())
				}
				// The field joins meta, so meta's nesting limit holds for
				// it: at level 2 of the line it sits where a field of meta
				// sits at level 2 of meta.
				s.deepest = maxMetaDepth
				e.value, err = s.canon(nil, 2)
				s.deepest = 0
				if err != nil {
					return Item{}, err
				}
				if s.problem != nil {
					rd.lineErr(n, fieldName(rd.key), s.problem.Error())
					s.problem = nil
				}
				extras = append(extras, e)
			}
			if err != nil {
				return Item{}, err
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
				continue
			case '}':
				s.i++
			default:
				return Item{}, errSyntax
			}
			break
		}
	}
	s.ws()
	if s.i != len(s.b) {
		return Item{}, errSyntax
	}

	if !haveID {
		rd.lineErr(n, "id", "missing; every item needs an id")
	}
	havePair := pair[0] != nil || pair[1] != nil || !pairOK
	switch {
	case list != "" && havePair:
		name := "user"
		if pair[0] == nil {
			name = "response"
		}
		rd.lineErr(n, name, "given together with "+list+"; give the dialogue one way")
	case list == "" && !havePair:
		rd.lineErr(n, "messages", "missing; give the dialogue as messages (role, content), as turns (role, text), or as user and response")
	case list == "":
		list, listOK = "response", pairOK
		for slot, name := range []string{"user", "response"} {
			if pair[slot] == nil {
				if pairOK {
					rd.lineErr(n, name, "missing; a single reply needs both user and response")
				}
				listOK = false
			} else {
				rd.spans = append(rd.spans, *pair[slot])
			}
		}
	}
	var sid string
	if id != nil {
		// A repeated id is reported even when the line has other problems:
		// both lines need fixing either way.
		if first, dup := rd.seen[string(id)]; dup {
			rd.lineErr(n, "id", fmt.Sprintf("%s already used on line %d", quote(id), first))
		} else {
			sid = string(id)
			rd.seen[sid] = n
		}
	}
	if len(rd.lineErrs) > 0 || !listOK {
		return Item{}, nil
	}

	// One string holds every text of the item: one allocation, not one a
	// message.
	text := string(rd.text)
	msgs := make([]Message, len(rd.spans))
	for i, sp := range rd.spans {
		msgs[i] = Message{Role: sp.role, Content: text[sp.start:sp.end]}
	}
	if problem := fitMessage(msgs, rd.opts.Unit); problem != "" {
		rd.lineErr(n, list, problem)
		return Item{}, nil
	}
	meta := []byte("{}")
	if haveMeta {
		meta = append([]byte(nil), rd.meta...)
	}
	if len(extras) > 0 {
		var problem string
		if meta, problem = rd.mergeMeta(meta, extras); problem != "" {
			rd.lineErr(n, "meta", problem)
			return Item{}, nil
		}
	}
	if len(meta) > rd.opts.MaxMetaBytes {
		what := "meta"
		if len(extras) > 0 {
			what = "meta with the fields beside the dialogue"
		}
		rd.lineErr(n, "meta", fmt.Sprintf("%s is %d bytes, over the limit of %s; keep long text in the messages or out of the file", what, len(meta), bytesLimit(rd.opts.MaxMetaBytes)))
		return Item{}, nil
	}
	rd.hashStart(len(rd.spans))
	for _, sp := range rd.spans {
		rd.hashMessage(sp.role, rd.text[sp.start:sp.end])
	}
	return Item{
		SourceID: sid,
		Kind:     kindOf(msgs),
		Messages: msgs,
		Meta:     meta,
		Turns:    CountTurns(msgs),
		SHA256:   rd.hashEnd(meta),
		Line:     n,
	}, nil
}

// skip reads past a value whose field is already reported, checking only
// that it is valid JSON.
func (rd *reader) skip(s *scanner) error {
	s.noSort = true
	_, err := s.canon(rd.canon[:0], 2)
	s.noSort = false
	// A key twice or a NUL inside a value that is wrong anyway adds nothing
	// to the problem already reported.
	s.problem = nil
	return err
}

// parseID reads the id: a string, or an integer kept as its decimal
// string. It returns the id, or nil after recording its problem.
func (rd *reader) parseID(s *scanner, n int) ([]byte, error) {
	switch c := s.peek(); {
	case c == '"':
		var err error
		if rd.id, err = s.str(rd.id[:0]); err != nil {
			return nil, err
		}
		if problem := checkID(rd.id); problem != "" {
			rd.lineErr(n, "id", problem)
			return nil, nil
		}
		return rd.id, nil
	case c == '-' || isDigit(c):
		lit, integer, err := s.number()
		if err != nil {
			return nil, err
		}
		if !integer {
			rd.lineErr(n, "id", "must be a string or an integer, not the number "+short(lit))
			return nil, nil
		}
		rd.id = append(rd.id[:0], lit...)
		return rd.id, nil
	default:
		rd.lineErr(n, "id", "must be a string or an integer, not "+typeName(c))
		return nil, rd.skip(s)
	}
}

// parseMeta reads meta, which must be an object, into rd.meta in
// canonical form.
func (rd *reader) parseMeta(s *scanner, n int) error {
	if c := s.peek(); c != '{' {
		rd.lineErr(n, "meta", "must be an object, not "+typeName(c))
		return rd.skip(s)
	}
	var err error
	s.deepest = 1 + maxMetaDepth // meta sits at level 2 of the line
	rd.meta, err = s.canon(rd.meta[:0], 2)
	s.deepest = 0
	if s.problem != nil {
		rd.lineErr(n, "meta", s.problem.Error())
		s.problem = nil
	}
	return err
}

// parseMessages reads the messages (or turns) array; list names it. It
// reports whether every message was well formed.
func (rd *reader) parseMessages(s *scanner, n int, list string) (bool, error) {
	textKey, other := "content", "text"
	if list == "turns" {
		textKey, other = "text", "content"
	}
	if c := s.peek(); c != '[' {
		rd.lineErr(n, list, "must be an array of {\"role\", \""+textKey+"\"} objects, not "+typeName(c))
		return false, rd.skip(s)
	}
	s.i++
	s.ws()
	if s.peek() == ']' {
		s.i++
		rd.lineErr(n, list, "empty; an item needs at least one message")
		return false, nil
	}
	ok := true
	for i := 0; ; i++ {
		s.ws()
		good, err := rd.parseMessage(s, n, list, i, textKey, other)
		if err != nil {
			return false, err
		}
		ok = ok && good
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			continue
		case ']':
			s.i++
			return ok, nil
		}
		return false, errSyntax
	}
}

// parseMessage reads element i of the list.
func (rd *reader) parseMessage(s *scanner, n int, list string, i int, textKey, other string) (bool, error) {
	field := func(name string) string { return list + "[" + strconv.Itoa(i) + "]" + name }
	if c := s.peek(); c != '{' {
		rd.lineErr(n, field(""), "must be an object with role and "+textKey+", not "+typeName(c))
		return false, rd.skip(s)
	}
	s.i++
	var (
		role            string
		haveRole, haveT bool
		haveOther       bool
		ok              = true
		m               msg
		err             error
	)
	s.ws()
	if s.peek() == '}' {
		s.i++
	} else {
		for {
			s.ws()
			if rd.key, err = s.str(rd.key[:0]); err != nil {
				return false, err
			}
			if err := s.expect(':'); err != nil {
				return false, err
			}
			s.ws()
			switch string(rd.key) {
			case "role":
				if haveRole {
					rd.lineErr(n, field(".role"), "given twice")
					ok = false
					err = rd.skip(s)
					break
				}
				haveRole = true
				role, err = rd.parseRole(s, n, field)
				ok = ok && role != ""
			case textKey:
				if haveT {
					rd.lineErr(n, field("."+textKey), "given twice")
					ok = false
					err = rd.skip(s)
					break
				}
				haveT = true
				if c := s.peek(); c != '"' {
					rd.lineErr(n, field("."+textKey), "must be a string, not "+typeName(c))
					ok = false
					err = rd.skip(s)
					break
				}
				m.start = len(rd.text)
				if rd.text, err = s.str(rd.text); err != nil {
					return false, err
				}
				m.end = len(rd.text)
				if problem := checkText(rd.text[m.start:m.end]); problem != "" {
					rd.lineErr(n, field("."+textKey), problem)
					ok = false
				}
			case other:
				// The other shape's name for the text: say so, and do not
				// also call the text missing.
				rd.lineErr(n, field("."+other), "unknown field; "+article(list)+" text is in \""+textKey+"\"")
				ok = false
				haveOther = true
				err = rd.skip(s)
			default:
				rd.lineErr(n, field("."+fieldName(rd.key)), "unknown field; "+strings.TrimSuffix(article(list), "'s")+" has only role and "+textKey)
				ok = false
				err = rd.skip(s)
			}
			if err != nil {
				return false, err
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
				continue
			case '}':
				s.i++
			default:
				return false, errSyntax
			}
			break
		}
	}
	if !haveRole {
		rd.lineErr(n, field(".role"), "missing; use user, assistant or system")
		ok = false
	}
	if !haveT && !haveOther {
		rd.lineErr(n, field("."+textKey), "missing")
		ok = false
	}
	if ok {
		m.role = role
		rd.spans = append(rd.spans, m)
	}
	return ok, nil
}

// parseRole reads a role, returning "" after recording its problem.
func (rd *reader) parseRole(s *scanner, n int, field func(string) string) (string, error) {
	if c := s.peek(); c != '"' {
		rd.lineErr(n, field(".role"), "must be a string, not "+typeName(c)+"; use user, assistant or system")
		return "", rd.skip(s)
	}
	var err error
	if rd.val, err = s.str(rd.val[:0]); err != nil {
		return "", err
	}
	switch string(rd.val) {
	case RoleUser:
		return RoleUser, nil
	case RoleAssistant:
		return RoleAssistant, nil
	case RoleSystem:
		return RoleSystem, nil
	}
	hint := ""
	switch string(bytesToLower(rd.val)) {
	case RoleUser, RoleAssistant, RoleSystem:
		hint = " (in lower case)"
	}
	rd.lineErr(n, field(".role"), "unknown role "+quote(rd.val)+": use user, assistant or system"+hint)
	return "", nil
}

func bytesToLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// extra is a top-level field of an item that is not part of the dialogue:
// its name and canonical value.
type extra struct {
	key   string
	value []byte
}

// mergeMeta adds the extra top-level fields to the canonical meta object
// and returns the result in canonical form, or a problem when a field is
// also inside meta (which of the two to keep is the user's call).
func (rd *reader) mergeMeta(meta []byte, extras []extra) ([]byte, string) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(meta, &fields); err != nil {
		return nil, "cannot be merged with the item's other fields: " + err.Error()
	}
	for _, e := range extras {
		if _, dup := fields[e.key]; dup {
			return nil, fmt.Sprintf("%s is given both beside the dialogue and inside meta; keep one", quote([]byte(e.key)))
		}
		fields[e.key] = e.value
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fields); err != nil {
		return nil, "cannot be merged with the item's other fields: " + err.Error()
	}
	// Re-canonicalise, so that a field given beside the dialogue or inside
	// meta gives the same bytes, and so the same hash.
	s := scanner{b: bytes.TrimSpace(buf.Bytes()), rd: rd}
	out, err := s.canon(nil, 2)
	if err != nil {
		return nil, "cannot be merged with the item's other fields"
	}
	return out, ""
}
