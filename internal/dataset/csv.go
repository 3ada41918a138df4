package dataset

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// csvColumns are the columns a CSV file must have, in the order messages
// name them.
var csvColumns = []string{"id", "user", "response"}

// errRecordTooLong stops the CSV reader at a record over the limit.
var errRecordTooLong = errors.New("dataset: record too long")

// recordLimit passes the file to encoding/csv while keeping count of lines
// and of the length of the current record, which it finds by the parity of
// quotes: a newline ends a record only outside quotes. encoding/csv would
// otherwise hold a record of any length in memory; recordLimit fails the
// read once one passes the limit.
type recordLimit struct {
	r        io.Reader
	max      int
	line     int  // lines begun so far
	recStart int  // line the current record starts on
	recLen   int  // bytes of the current record so far
	inQuote  bool // inside a quoted field
	lastNL   bool // the last byte read was a newline
	err      error
}

func (l *recordLimit) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	for i, c := range p[:n] {
		if l.lastNL || l.line == 0 {
			l.line++
			if !l.inQuote {
				l.recStart, l.recLen = l.line, 0
			}
		}
		l.lastNL = false
		switch c {
		case '"':
			l.inQuote = !l.inQuote
		case '\n':
			l.lastNL = true
			continue // the line ending is not part of the length
		case '\r':
			continue
		}
		l.recLen++
		if l.recLen > l.max {
			// Hand on what came before this record; fail the next read.
			l.err = errRecordTooLong
			return i, nil
		}
	}
	return n, err
}

func (rd *reader) readCSV() error {
	lim := &recordLimit{r: rd.br, max: rd.opts.MaxLineBytes}
	cr := csv.NewReader(lim)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1 // counted here, for a clearer message
	defer func() { rd.sum.Lines = lim.line }()

	header, err := cr.Read()
	if err == io.EOF {
		return nil // no items: run says so
	}
	if err != nil {
		return rd.csvReadError(err, lim)
	}
	cols, ok := rd.csvHeader(header)
	if !ok {
		return nil
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if err := rd.csvReadError(err, lim); err != nil || lim.err != nil {
				return err
			}
			continue
		}
		n, _ := cr.FieldPos(0)
		if len(rec) != len(header) {
			rd.report(LineError{Line: n, Message: fmt.Sprintf("the record has %d %s, but the header has %d", len(rec), plural(len(rec), "field", "fields"), len(header))})
			continue
		}
		if err := rd.csvRecord(rec, cols, n); err != nil {
			return err
		}
	}
}

// csvReadError reports a CSV syntax error or an over-long record; any other
// error is a failure to read the file, returned.
func (rd *reader) csvReadError(err error, lim *recordLimit) error {
	if errors.Is(err, errRecordTooLong) {
		rd.report(LineError{Line: lim.recStart, Message: fmt.Sprintf("the record starting on this line is over the limit of %s; if it should be shorter, look for a missing or extra \" here; reading stopped", bytesLimit(rd.opts.MaxLineBytes))})
		return nil
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		where := fmt.Sprintf("column %d", pe.Column)
		if pe.Line != pe.StartLine {
			where = fmt.Sprintf("line %d, column %d", pe.Line, pe.Column)
		}
		rd.report(LineError{Line: pe.StartLine, Message: fmt.Sprintf("invalid CSV at %s: %v", where, pe.Err)})
		return nil
	}
	return fmt.Errorf("dataset: read: %w", err)
}

// csvHeader checks the header and returns the index of each column in the
// order of csvColumns.
func (rd *reader) csvHeader(header []string) ([3]int, bool) {
	cols := [3]int{-1, -1, -1}
	var unknown, twice []string
	for i, h := range header {
		name := strings.ToLower(strings.TrimSpace(h))
		k := slices.Index(csvColumns, name)
		switch {
		case k < 0:
			unknown = append(unknown, strconv.Quote(h))
		case cols[k] >= 0:
			twice = append(twice, strconv.Quote(h))
		default:
			cols[k] = i
		}
	}
	var missing []string
	for k, i := range cols {
		if i < 0 {
			missing = append(missing, strconv.Quote(csvColumns[k]))
		}
	}
	const want = "the header must be id,user,response (in any order)"
	ok := true
	if len(unknown) > 0 {
		rd.report(LineError{Line: 1, Field: "header", Message: fmt.Sprintf("unknown %s %s; %s", plural(len(unknown), "column", "columns"), strings.Join(unknown, ", "), want)})
		ok = false
	}
	if len(twice) > 0 {
		rd.report(LineError{Line: 1, Field: "header", Message: fmt.Sprintf("%s %s more than once", plural(len(twice), "column", "columns"), strings.Join(twice, ", "))})
		ok = false
	}
	if len(missing) > 0 {
		rd.report(LineError{Line: 1, Field: "header", Message: fmt.Sprintf("missing %s %s; %s", plural(len(missing), "column", "columns"), strings.Join(missing, ", "), want)})
		ok = false
	}
	return cols, ok
}

// csvRecord checks one record, which starts on line n, and hands on its
// item.
func (rd *reader) csvRecord(rec []string, cols [3]int, n int) error {
	bad := false
	var vals [3]string
	for k, i := range cols {
		v := rec[i]
		vals[k] = v
		var problem string
		if at := invalidUTF8String(v); at >= 0 {
			problem = fmt.Sprintf("invalid UTF-8 at byte %d of the field (0x%02x); save the file as UTF-8", at+1, v[at])
		} else if k == 0 {
			problem = checkID([]byte(v))
		} else {
			problem = checkText([]byte(v))
		}
		if problem != "" {
			rd.report(LineError{Line: n, Field: csvColumns[k], Message: problem})
			bad = true
			if k == 0 {
				vals[0] = "" // no id to check for repeats
			}
		}
	}
	if id := vals[0]; id != "" {
		// A repeated id is reported even when the record has other
		// problems: both records need fixing either way.
		if first, dup := rd.seen[id]; dup {
			rd.report(LineError{Line: n, Field: "id", Message: fmt.Sprintf("%s already used on line %d", quote([]byte(id)), first)})
			bad = true
		} else {
			// A copy: the id alone, not the record it was cut from, stays
			// in memory.
			rd.seen[strings.Clone(id)] = n
		}
	}
	if bad {
		return nil
	}
	// One allocation holds the three fields the item keeps.
	all := vals[0] + vals[1] + vals[2]
	a, b := len(vals[0]), len(vals[0])+len(vals[1])
	msgs := []Message{
		{Role: RoleUser, Content: all[a:b]},
		{Role: RoleAssistant, Content: all[b:]},
	}
	meta := []byte("{}")
	return rd.add(Item{
		SourceID: all[:a],
		Kind:     Reply,
		Messages: msgs,
		Meta:     meta,
		Turns:    1,
		SHA256:   rd.hash(msgs, meta),
		Line:     n,
	})
}

func invalidUTF8String(s string) int {
	if utf8.ValidString(s) {
		return -1
	}
	return invalidUTF8([]byte(s))
}
