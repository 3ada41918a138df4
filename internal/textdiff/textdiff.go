// Package textdiff compares two texts line by line, for showing a lead
// what an edited judge prompt changed. It imports only the standard
// library.
package textdiff

import "strings"

// Op says what happened to a line.
type Op int

// The operations of a line diff.
const (
	Same   Op = iota // in both texts
	Delete           // only in the old text
	Insert           // only in the new text
)

// Line is one line of a diff.
type Line struct {
	Op   Op
	Text string
}

// maxCells bounds the table of the longest-common-subsequence search:
// above it (two texts of thousands of differing lines) the differing
// middle is shown as removed and then added, which is still correct,
// only not minimal.
const maxCells = 4_000_000

// Lines returns the line diff turning old into new: a shortest edit
// script (longest common subsequence) over the lines, common lines as
// Same, removed ones as Delete before added ones as Insert at each
// change. A text's final newline does not make an empty last line.
func Lines(old, new string) []Line {
	a, b := split(old), split(new)
	var out []Line
	// Common head and tail are matched outright; they are most of an
	// edited prompt.
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		out = append(out, Line{Same, a[p]})
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	out = append(out, middle(a[p:len(a)-s], b[p:len(b)-s])...)
	for _, l := range a[len(a)-s:] {
		out = append(out, Line{Same, l})
	}
	return out
}

// Changed reports whether a diff holds any change.
func Changed(d []Line) bool {
	for _, l := range d {
		if l.Op != Same {
			return true
		}
	}
	return false
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func middle(a, b []string) []Line {
	n, m := len(a), len(b)
	if n*m > maxCells {
		out := make([]Line, 0, n+m)
		for _, l := range a {
			out = append(out, Line{Delete, l})
		}
		for _, l := range b {
			out = append(out, Line{Insert, l})
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of
	// a[i:] and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []Line
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, Line{Same, a[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, Line{Delete, a[i]})
			i++
		default:
			out = append(out, Line{Insert, b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, Line{Delete, a[i]})
	}
	for ; j < m; j++ {
		out = append(out, Line{Insert, b[j]})
	}
	return out
}
