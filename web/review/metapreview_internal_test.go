package review

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestIndentPreviewIsJSONIndent holds the preview to encoding/json's
// indentation whenever the whole of the meta fits.
func TestIndentPreviewIsJSONIndent(t *testing.T) {
	for _, src := range []string{
		`{}`, `{"a": 1}`, `{"a": [], "b": {}, "c": [1, {"d": "x, y: {z}"}]}`,
		`{"q": "a \"quoted\" \\ back\\"}`, `{"lang": "en", "tags": ["a", "b"], "n": null, "t": true, "f": -1.5e3}`,
		"{\n  \"spaced\" :\t[ 1 ,2 ]\n}", `{"é": "ünï"}`,
	} {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(src), "", "  "); err != nil {
			t.Fatal(err)
		}
		got, more := indentPreview([]byte(src), 1<<20)
		if got != want.String() || more != 0 {
			t.Errorf("%s: got %q (%d more), want %q", src, got, more, want.String())
		}
	}
}

// TestIndentPreviewIsBounded indents meta that json.Indent would blow up
// to hundreds of megabytes and checks the preview stops at its limit, on
// a character boundary, and counts what it left out.
func TestIndentPreviewIsBounded(t *testing.T) {
	deep := `{"x0": ` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `}`
	long := `{"note": "` + strings.Repeat("é", 50000) + `"}`
	for name, src := range map[string]string{"deep": deep, "long": long} {
		got, more := indentPreview([]byte(src), metaPreviewBytes)
		if len(got) > metaPreviewBytes || len(got) < metaPreviewBytes-utf8.UTFMax {
			t.Errorf("%s: preview is %d bytes, want just under %d", name, len(got), metaPreviewBytes)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: preview is cut inside a character", name)
		}
		if more <= 0 || more >= len(src) {
			t.Errorf("%s: %d bytes left out of %d", name, more, len(src))
		}
	}
	if got := compactPreview([]byte(long), metaRowBytes); len(got) > metaRowBytes+len("…") || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Errorf("row preview %q", got)
	}
	if got := compactPreview([]byte(`{"lang": "en", "a b": [1, 2]}`), metaRowBytes); got != `{"lang":"en","a b":[1,2]}` {
		t.Errorf("row preview %q", got)
	}
	if got := compactPreview([]byte(`{}`), metaRowBytes); got != "" {
		t.Errorf("empty meta's row preview %q", got)
	}
}
