package agreement

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Ratings is a raw raters × items table built from (item, rater, value)
// triples, for the CLI and for tests; the app aggregates in SQL instead.
// Strings are interned, so memory grows with the number of triples but each
// distinct item, rater and value is stored once. A Ratings is not safe for
// concurrent Add; once built, reading it concurrently is safe.
type Ratings struct {
	items, raters, values map[string]int32
	itemNames, raterNames []string
	valueNames            []string
	valueLine             []int // line where each value was first seen, 0 if not from a file
	entries               []entry
}

// entry is one triple; value -1 is missing, line 0 not from a file.
type entry struct {
	item, rater, value, line int32
}

// NewRatings returns an empty table.
func NewRatings() *Ratings {
	return &Ratings{
		items:  make(map[string]int32),
		raters: make(map[string]int32),
		values: make(map[string]int32),
	}
}

// Add records that rater gave item the answer value; an empty value (after
// trimming space) records the pair as missing, which still counts the item
// and the rater. It fails when item or rater is empty. A rater answering an
// item twice is not checked here but by Units, Pair and Summarize, which
// fail on it: checking once over all triples is much cheaper than on every
// Add.
func (r *Ratings) Add(item, rater, value string) error {
	if err := r.add(item, rater, value, 0); err != nil {
		return fmt.Errorf("agreement: %w", err)
	}
	return nil
}

func (r *Ratings) add(item, rater, value string, line int) error {
	item, rater, value = strings.TrimSpace(item), strings.TrimSpace(rater), strings.TrimSpace(value)
	if item == "" {
		return errors.New("empty item")
	}
	if rater == "" {
		return errors.New("empty rater")
	}
	i := intern(r.items, &r.itemNames, item)
	j := intern(r.raters, &r.raterNames, rater)
	v := int32(-1)
	if value != "" {
		n := len(r.valueNames)
		v = intern(r.values, &r.valueNames, value)
		if int(v) == n {
			r.valueLine = append(r.valueLine, line)
		}
	}
	r.entries = append(r.entries, entry{item: i, rater: j, value: v, line: int32(line)})
	return nil
}

// checkDuplicates fails if a rater answered an item twice, naming the
// earliest repeated triple (by line, for a file) and where the first was.
func (r *Ratings) checkDuplicates() error {
	// Group entries by item with a counting sort (stable, so file order is
	// kept within an item), then look for a rater seen twice in one item.
	start := make([]int32, len(r.itemNames)+1)
	for _, e := range r.entries {
		start[e.item+1]++
	}
	for i := 1; i < len(start); i++ {
		start[i] += start[i-1]
	}
	order := make([]int32, len(r.entries))
	next := append([]int32(nil), start[:len(start)-1]...)
	for k, e := range r.entries {
		order[next[e.item]] = int32(k)
		next[e.item]++
	}
	lastItem := make([]int32, len(r.raterNames))
	firstAt := make([]int32, len(r.raterNames))
	for j := range lastItem {
		lastItem[j] = -1
	}
	dup, prev := -1, -1
	for i := range r.itemNames {
		for _, k := range order[start[i]:start[i+1]] {
			e := r.entries[k]
			if lastItem[e.rater] != int32(i) {
				lastItem[e.rater], firstAt[e.rater] = int32(i), k
				continue
			}
			if dup < 0 || int(k) < dup {
				dup, prev = int(k), int(firstAt[e.rater])
			}
		}
	}
	if dup < 0 {
		return nil
	}
	e, p := r.entries[dup], r.entries[prev]
	item, rater := r.itemNames[e.item], r.raterNames[e.rater]
	if e.line == 0 {
		return fmt.Errorf("agreement: rater %q rated item %q twice", rater, item)
	}
	return &LineError{Line: int(e.line), Err: fmt.Errorf("rater %q already rated item %q on line %d", rater, item, p.line)}
}

func intern(m map[string]int32, names *[]string, s string) int32 {
	if i, ok := m[s]; ok {
		return i
	}
	i := int32(len(*names))
	// Clone, since the CSV reader's strings share one buffer per record.
	s = strings.Clone(s)
	m[s] = i
	*names = append(*names, s)
	return i
}

// NumItems returns the number of distinct items, including items whose
// every value is missing.
func (r *Ratings) NumItems() int { return len(r.itemNames) }

// NumRaters returns the number of distinct raters, including raters whose
// every value is missing.
func (r *Ratings) NumRaters() int { return len(r.raterNames) }

// Raters returns the raters in order of first appearance.
func (r *Ratings) Raters() []string { return append([]string(nil), r.raterNames...) }

// Values returns the distinct non-missing values in order of first
// appearance; InferScale turns them into a scale.
func (r *Ratings) Values() []string { return append([]string(nil), r.valueNames...) }

// LineError is an error about one line of a CSV file.
type LineError struct {
	// Line is the 1-based line number (of the record's first line when a
	// quoted field spans several).
	Line int
	// Err is what is wrong with it.
	Err error
}

// Error returns "line N: " and the cause.
func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// ReadLongCSV reads a long-form CSV of ratings, one (item, rater, value) per
// record, streaming. The first record is a header naming the columns item,
// rater and value (any order, any case; other columns are ignored). An empty
// value is a missing rating. It stops at the first bad line and returns a
// *LineError naming it: a malformed record, a wrong number of fields, an
// empty item or rater; a rater rating an item twice is found once the whole
// file is read and reported at the earliest repeated line. Other errors are
// the reader's.
func ReadLongCSV(rd io.Reader) (*Ratings, error) {
	cr := csv.NewReader(rd)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, &LineError{Line: 1, Err: errors.New("empty file: want a header item,rater,value")}
	}
	if err != nil {
		return nil, csvError(err)
	}
	col := map[string]int{"item": -1, "rater": -1, "value": -1}
	for i, h := range header {
		h = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))
		if at, ok := col[h]; ok {
			if at >= 0 {
				return nil, &LineError{Line: 1, Err: fmt.Errorf("header names column %q twice", h)}
			}
			col[h] = i
		}
	}
	for _, name := range []string{"item", "rater", "value"} {
		if col[name] < 0 {
			return nil, &LineError{Line: 1, Err: fmt.Errorf("header has no %q column (want item,rater,value)", name)}
		}
	}
	ci, cr2, cv := col["item"], col["rater"], col["value"]
	r := NewRatings()
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			if err := r.checkDuplicates(); err != nil {
				return nil, err
			}
			return r, nil
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if err := r.add(rec[ci], rec[cr2], rec[cv], line); err != nil {
			return nil, &LineError{Line: line, Err: err}
		}
	}
}

// csvError turns the csv package's errors into LineErrors.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &LineError{Line: pe.Line, Err: pe.Err}
	}
	return err
}

// valueIndex maps every value of r onto the scale, or fails naming the first
// value the scale lacks and the line it was first seen on.
func (r *Ratings) valueIndex(s *Scale) ([]int, error) {
	idx := make([]int, len(r.valueNames))
	for v, name := range r.valueNames {
		k, ok := s.Index(name)
		if !ok {
			err := fmt.Errorf("value %q is not on the scale %s", name, s)
			if r.valueLine[v] > 0 {
				return nil, &LineError{Line: r.valueLine[v], Err: err}
			}
			return nil, err
		}
		idx[v] = k
	}
	return idx, nil
}

// Units aggregates the table into Units over s: one unit per distinct vector
// of category counts, weighted by the number of items that have it, as SQL
// would with GROUP BY. Items with no rating drop out. It fails when a value
// is not on the scale.
func (r *Ratings) Units(s *Scale) (Units, error) {
	if err := r.checkDuplicates(); err != nil {
		return Units{}, err
	}
	idx, err := r.valueIndex(s)
	if err != nil {
		return Units{}, err
	}
	q := s.Len()
	counts := make([]int32, len(r.itemNames)*q)
	for _, e := range r.entries {
		if e.value >= 0 {
			counts[int(e.item)*q+idx[e.value]]++
		}
	}
	var list []Unit
	pattern := make(map[string]int)
	key := make([]byte, 0, 4*q)
	for i := range r.itemNames {
		c := counts[i*q : (i+1)*q]
		key = key[:0]
		empty := true
		for _, x := range c {
			key = append(key, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
			empty = empty && x == 0
		}
		if empty {
			continue
		}
		if at, ok := pattern[string(key)]; ok {
			list[at].Weight++
			continue
		}
		pattern[string(key)] = len(list)
		u := Unit{Counts: make([]int, q), Weight: 1}
		for k, x := range c {
			u.Counts[k] = int(x)
		}
		list = append(list, u)
	}
	return Units{scale: s, list: list, items: countItems(list)}, nil
}

func countItems(list []Unit) int {
	n := 0
	for _, u := range list {
		n += u.Weight
	}
	return n
}

// Pair returns the contingency table of raters a (rows) and b (columns) over
// the items both rated, on scale s. It fails when a rater is unknown, a and b
// are the same, or a value is not on the scale.
func (r *Ratings) Pair(s *Scale, a, b string) (Contingency, error) {
	ia, oka := r.raters[a]
	ib, okb := r.raters[b]
	switch {
	case !oka:
		return Contingency{}, fmt.Errorf("agreement: unknown rater %q", a)
	case !okb:
		return Contingency{}, fmt.Errorf("agreement: unknown rater %q", b)
	case ia == ib:
		return Contingency{}, fmt.Errorf("agreement: rater %q paired with itself", a)
	}
	if err := r.checkDuplicates(); err != nil {
		return Contingency{}, err
	}
	idx, err := r.valueIndex(s)
	if err != nil {
		return Contingency{}, err
	}
	va := make([]int32, len(r.itemNames))
	vb := make([]int32, len(r.itemNames))
	for i := range va {
		va[i], vb[i] = -1, -1
	}
	for _, e := range r.entries {
		if e.value < 0 {
			continue
		}
		switch e.rater {
		case ia:
			va[e.item] = int32(idx[e.value])
		case ib:
			vb[e.item] = int32(idx[e.value])
		}
	}
	q := s.Len()
	c := Contingency{scale: s, cells: make([][]int, q)}
	for k := range c.cells {
		c.cells[k] = make([]int, q)
	}
	for i := range va {
		if va[i] >= 0 && vb[i] >= 0 {
			c.cells[va[i]][vb[i]]++
			c.n++
		}
	}
	return c, nil
}
