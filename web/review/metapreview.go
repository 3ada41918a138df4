package review

import (
	"bytes"
	"unicode/utf8"
)

// metaPreviewBytes is the most of an item's indented meta a page shows;
// the whole of it is a download away (BrowseItemMeta). Indenting
// multiplies deep meta many times over, so pages never indent more.
const metaPreviewBytes = 16 << 10

// metaRowBytes is the most of an item's meta one row of the items browser
// shows, on one line.
const metaRowBytes = 200

// indentPreview indents the JSON text src two spaces a level, as
// json.Indent does, but stops once the result reaches limit bytes. It
// returns the text (cut at a character boundary) and how many bytes of src
// it did not reach, 0 when the whole of src is shown. src must be valid
// JSON (a stored meta); the output of invalid input is unspecified but
// still bounded.
func indentPreview(src []byte, limit int) (string, int) {
	var out bytes.Buffer
	depth := 0
	newline := func() {
		out.WriteByte('\n')
		for i := 0; i < depth && out.Len() < limit; i++ {
			out.WriteString("  ")
		}
	}
	inString, escaped := false, false
	i := 0
	for ; i < len(src) && out.Len() < limit; i++ {
		c := src[i]
		if inString {
			out.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '"':
			inString = true
			out.WriteByte(c)
		case '{', '[':
			out.WriteByte(c)
			// An empty object or array stays on its line.
			j := i + 1
			for j < len(src) && (src[j] == ' ' || src[j] == '\t' || src[j] == '\n' || src[j] == '\r') {
				j++
			}
			if j < len(src) && (src[j] == '}' || src[j] == ']') {
				out.WriteByte(src[j])
				i = j
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			out.WriteByte(c)
		case ',':
			out.WriteByte(c)
			newline()
		case ':':
			out.WriteString(": ")
		default:
			out.WriteByte(c)
		}
	}
	// Skip the white space the loop would have dropped anyway.
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	b := out.Bytes()
	if i == len(src) && len(b) <= limit {
		return string(b), 0
	}
	if len(b) > limit {
		b = b[:limit]
	}
	for len(b) > 0 {
		if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size > 1 {
			break
		}
		b = b[:len(b)-1]
	}
	return string(b), max(1, len(src)-i)
}

// compactPreview is src on one line without insignificant space, cut to
// limit bytes with "…" when longer; "" for an empty object.
func compactPreview(src []byte, limit int) string {
	var out bytes.Buffer
	inString, escaped := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if out.Len() >= limit {
			b := out.Bytes()[:limit]
			for len(b) > 0 {
				if r, size := utf8.DecodeLastRune(b); r != utf8.RuneError || size > 1 {
					break
				}
				b = b[:len(b)-1]
			}
			return string(b) + "…"
		}
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		out.WriteByte(c)
	}
	if out.String() == "{}" {
		return ""
	}
	return out.String()
}
