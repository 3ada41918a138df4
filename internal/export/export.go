// Package export writes attune's datasets — the gold set, every raw label
// in long form, the judges' calls and the annotators' flags — as CSV or
// JSON Lines, one row at a time, so that an export of any size needs the
// memory of one row.
//
// CSV follows RFC 4180 as encoding/csv writes it: UTF-8 without a byte
// order mark, a header row, fields quoted when they hold a comma, a quote
// or a line break, records ending in LF (not CRLF; every CSV reader in use
// accepts both). A text cell a spreadsheet would run as a formula — one
// starting with =, +, -, @, a tab or a carriage return — is neutralised
// with a leading apostrophe (see Neutralise); numbers are never touched.
// JSON Lines carries the same columns as one object per line, with numbers
// and booleans typed, lists as arrays and an empty cell as null, and no
// neutralisation: it is read by programs, not spreadsheets.
//
// The package is pure: it reads rubric definitions and scores with the
// engine, and writes to an io.Writer.
package export

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Format is how an export is written.
type Format string

// The export formats.
const (
	CSV   Format = "csv"
	JSONL Format = "jsonl"
)

// ParseFormat returns the format named s ("csv" or "jsonl"; "" is CSV).
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "csv":
		return CSV, nil
	case "jsonl", "ndjson":
		return JSONL, nil
	}
	return "", fmt.Errorf("export: unknown format %q: use csv or jsonl", s)
}

// ContentType is the media type of the format, for an HTTP response.
func (f Format) ContentType() string {
	switch f {
	case JSONL:
		return "application/x-ndjson; charset=utf-8"
	case Parquet:
		return "application/vnd.apache.parquet"
	}
	return "text/csv; charset=utf-8"
}

// Kind is what a column holds, which decides how a cell is written.
type Kind uint8

// The kinds of column.
const (
	// Text cells are strings: neutralised in CSV, JSON strings in JSONL.
	Text Kind = iota
	// Number cells hold a number as text that is also a JSON number; they
	// are written as they are.
	Number
	// Bool cells hold "true" or "false".
	Bool
	// List cells hold a list of strings: joined by ";" in CSV, a JSON
	// array in JSONL.
	List
	// Numbers cells hold a list of whole numbers, as text: joined by ";"
	// in CSV, a JSON array of numbers in JSONL.
	Numbers
)

// Column is one column of a table.
type Column struct {
	Name string
	Kind Kind
}

// Cell is one value of a row. Null is an empty cell (CSV) or null (JSONL);
// a List column reads L, the others S.
type Cell struct {
	S    string
	L    []string
	Null bool
}

// Table writes rows of fixed columns in one format. It buffers its output;
// call Flush at the end. A Table is not safe for concurrent use.
type Table struct {
	format Format
	cols   []Column
	bw     *bufio.Writer
	csv    *csv.Writer
	record []string // reused for each CSV row
	keys   [][]byte // each column's JSON key with its quotes and colon
	buf    []byte   // reused for each JSON line
	rows   int
}

// NewTable starts a table of the given columns on w, writing the CSV header
// at once (JSON Lines has none).
func NewTable(w io.Writer, f Format, cols []Column) (*Table, error) {
	t := &Table{format: f, cols: cols, bw: bufio.NewWriterSize(w, 64<<10)}
	switch f {
	case CSV:
		t.csv = csv.NewWriter(t.bw)
		t.record = make([]string, len(cols))
		for i, c := range cols {
			t.record[i] = Neutralise(c.Name)
		}
		if err := t.csv.Write(t.record); err != nil {
			return nil, fmt.Errorf("export: header: %w", err)
		}
	case JSONL:
		t.keys = make([][]byte, len(cols))
		for i, c := range cols {
			t.keys[i] = append(appendJSONString(nil, c.Name), ':')
		}
	default:
		return nil, fmt.Errorf("export: unknown format %q", f)
	}
	return t, nil
}

// Columns returns the table's columns.
func (t *Table) Columns() []Column { return t.cols }

// Rows returns how many rows were written, the header not counted.
func (t *Table) Rows() int { return t.rows }

// Write writes one row; cells are in column order, one per column.
func (t *Table) Write(cells []Cell) error {
	if len(cells) != len(t.cols) {
		return fmt.Errorf("export: row of %d cells for %d columns", len(cells), len(t.cols))
	}
	var err error
	if t.format == CSV {
		for i, c := range cells {
			t.record[i] = csvCell(t.cols[i].Kind, c)
		}
		err = t.csv.Write(t.record)
	} else {
		b := append(t.buf[:0], '{')
		for i, c := range cells {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, t.keys[i]...)
			b = appendJSONCell(b, t.cols[i].Kind, c)
		}
		b = append(b, '}', '\n')
		t.buf = b
		_, err = t.bw.Write(b)
	}
	if err != nil {
		return fmt.Errorf("export: row %d: %w", t.rows+1, err)
	}
	t.rows++
	return nil
}

// Flush writes out what is buffered.
func (t *Table) Flush() error {
	if t.csv != nil {
		t.csv.Flush()
		if err := t.csv.Error(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	if err := t.bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

func csvCell(k Kind, c Cell) string {
	switch {
	case c.Null:
		return ""
	case k == Number || k == Bool:
		return c.S
	case k == List:
		return Neutralise(strings.Join(c.L, ";"))
	case k == Numbers:
		return strings.Join(c.L, ";")
	}
	return Neutralise(c.S)
}

func appendJSONCell(b []byte, k Kind, c Cell) []byte {
	switch {
	case c.Null:
		return append(b, "null"...)
	case k == Number || k == Bool:
		return append(b, c.S...)
	case k == List:
		b = append(b, '[')
		for i, s := range c.L {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s)
		}
		return append(b, ']')
	case k == Numbers:
		b = append(b, '[')
		for i, s := range c.L {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, s...)
		}
		return append(b, ']')
	}
	return appendJSONString(b, c.S)
}

// Neutralise returns a text cell as a spreadsheet shows it without running
// it: a cell starting with =, +, -, @, a tab or a carriage return gets a
// leading apostrophe, unless the whole cell is a plain number ("-2", "+1.5",
// which no spreadsheet runs). A cell that starts with an apostrophe gets
// one more, so that the rule can be undone: Restore strips exactly one
// leading apostrophe from any cell that has one.
func Neutralise(s string) string {
	if s == "" {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		if plainNumber(s) {
			return s
		}
		return "'" + s
	case '\'':
		return "'" + s
	}
	return s
}

// Restore undoes Neutralise, for a program that reads a CSV export back.
func Restore(s string) string { return strings.TrimPrefix(s, "'") }

// plainNumber reports whether s is a decimal number and nothing else: an
// optional sign, digits with an optional fraction, an optional exponent.
func plainNumber(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		exp := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i, exp = i+1, exp+1
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json writes it; U+2028 and U+2029 are escaped so that
// a line is safe to embed in JavaScript.
func appendJSONString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		// A rune is at most 4 bytes: converting those few is done on the
		// stack, so []byte text costs no allocation.
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// Dataset names what is exported.
type Dataset string

// The datasets attune exports.
const (
	// Gold is the gold set: one row per item.
	Gold Dataset = "gold"
	// Labels is every raw label in long form: one row per rater, item and
	// rubric item.
	Labels Dataset = "labels"
	// JudgeCalls is every call a judge made to its model.
	JudgeCalls Dataset = "judge-calls"
	// Flags is every flag annotators raised, with how leads resolved it.
	Flags Dataset = "flags"
)

// Datasets lists every dataset, in the order pages show them.
var Datasets = []Dataset{Gold, Labels, JudgeCalls, Flags}

// ParseDataset returns the dataset named s.
func ParseDataset(s string) (Dataset, error) {
	for _, d := range Datasets {
		if string(d) == s {
			return d, nil
		}
	}
	return "", fmt.Errorf("export: unknown dataset %q: use gold, labels, judge-calls or flags", s)
}

// FileName is the name a download of the dataset gets: the project's name
// made safe for a file system, the dataset and the format's extension.
func FileName(project string, d Dataset, f Format) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(project) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimSuffix(b.String(), "-")
	if name == "" {
		name = "project"
	}
	return name + "-" + string(d) + "." + string(f)
}
