package textdiff

import (
	"slices"
	"strings"
	"testing"
)

// render writes a diff as "  same", "- old", "+ new" lines.
func render(d []Line) string {
	var b strings.Builder
	for _, l := range d {
		b.WriteString([]string{"  ", "- ", "+ "}[l.Op] + l.Text + "\n")
	}
	return b.String()
}

func TestLines(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, old, new, want string
	}{
		{"equal", "a\nb\n", "a\nb", "  a\n  b\n"},
		{"empty to text", "", "x", "+ x\n"},
		{"text to empty", "x\ny", "", "- x\n- y\n"},
		{"one line changed", "Rate this.\n{{Dialog}}\nAnswer YES or NO.", "Rate this strictly.\n{{Dialog}}\nAnswer YES or NO.",
			"- Rate this.\n+ Rate this strictly.\n  {{Dialog}}\n  Answer YES or NO.\n"},
		{"insert in the middle", "a\nb\nc", "a\nb\nx\nc", "  a\n  b\n+ x\n  c\n"},
		{"moved line", "a\nb\nc", "b\nc\na", "- a\n  b\n  c\n+ a\n"},
		{"interleaved", "a\nx\nb\ny\nc", "a\nb\nc", "  a\n- x\n  b\n- y\n  c\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := render(Lines(c.old, c.new)); got != c.want {
				t.Errorf("Lines(%q, %q) =\n%s\nwant\n%s", c.old, c.new, got, c.want)
			}
		})
	}
}

// A diff rebuilds both texts: Same and Delete lines are the old text,
// Same and Insert lines the new one.
func FuzzLines(f *testing.F) {
	f.Add("a\nb\nc", "a\nc\nd")
	f.Add("", "x\n")
	f.Fuzz(func(t *testing.T, old, new string) {
		d := Lines(old, new)
		var a, b []string
		for _, l := range d {
			if l.Op != Insert {
				a = append(a, l.Text)
			}
			if l.Op != Delete {
				b = append(b, l.Text)
			}
		}
		if !slices.Equal(a, split(old)) || !slices.Equal(b, split(new)) {
			t.Fatalf("diff of %q and %q does not rebuild them:\n%s", old, new, render(d))
		}
		if Changed(d) != !slices.Equal(split(old), split(new)) {
			t.Fatalf("Changed = %v for %q and %q", Changed(d), old, new)
		}
	})
}

// Texts too long for the table still give a diff that rebuilds them.
func TestLinesLarge(t *testing.T) {
	t.Parallel()
	var a, b []string
	for i := range 3000 {
		a = append(a, "a"+strings.Repeat("a", i%7))
		b = append(b, "b"+strings.Repeat("b", i%5))
	}
	d := Lines(strings.Join(a, "\n"), strings.Join(b, "\n"))
	if len(d) != 6000 {
		t.Fatalf("got %d lines, want 6000", len(d))
	}
}
