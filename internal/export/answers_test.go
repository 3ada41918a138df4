package export

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"unicode/utf8"
)

// parseAnswers collects EachAnswer's pairs, the last of a repeated key
// winning as in encoding/json.
func parseAnswers(b []byte) (map[string]string, error) {
	m := map[string]string{}
	err := EachAnswer(b, func(k, v []byte) { m[string(k)] = string(v) })
	return m, err
}

func TestEachAnswer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[string]string // nil: refused
	}{
		{`{}`, map[string]string{}},
		{` { } `, map[string]string{}},
		// json_object_agg's own layout.
		{`{ "CQ1" : "YES", "CQ2" : "NA" }`, map[string]string{"CQ1": "YES", "CQ2": "NA"}},
		{`{"a":"1","b":"2"}`, map[string]string{"a": "1", "b": "2"}},
		{`{ "q\"uote" : "back\\slash", "u" : "\u00e9\ud83d\ude00\n" }`, map[string]string{`q"uote`: `back\slash`, "u": "é😀\n"}},
		{`{ "k" : "ünï" }`, map[string]string{"k": "ünï"}},
		{``, nil},
		{`[]`, nil},
		{`{ "k" : 1 }`, nil},
		{`{ "k" : null }`, nil},
		{`{ "k" "v" }`, nil},
		{`{ "k" : "v" `, nil},
		{`{ "k" : "v", }`, nil},
		{`{ "k" : "v" } x`, nil},
		{`{ "k" : "a` + "\n" + `b" }`, nil},
		{`{ "k" : "\x" }`, nil},
	} {
		got, err := parseAnswers([]byte(tc.in))
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: read as %v, want an error", tc.in, got)
			} else if !strings.Contains(err.Error(), "not a JSON object of strings") {
				t.Errorf("%q: error %v does not say what is wrong", tc.in, err)
			}
			continue
		}
		if err != nil || !maps.Equal(got, tc.want) {
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// FuzzEachAnswer: whatever EachAnswer reads, encoding/json reads the same,
// and an object of strings encoding/json reads, EachAnswer reads too.
func FuzzEachAnswer(f *testing.F) {
	for _, s := range []string{`{}`, `{ "CQ1" : "YES", "CQ2" : "NA" }`, `{"a":"\u00e9\"","b":"\\"}`, `{ "k" : 1 }`, `{"k":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return // encoding/json replaces bad bytes; stored json is valid text
		}
		got, err := parseAnswers(b)
		var want map[string]string
		jerr := json.Unmarshal(b, &want)
		if jerr == nil && want == nil {
			jerr = json.Unmarshal([]byte("x"), &want) // JSON null: not an object
		}
		switch {
		case err == nil && jerr != nil:
			t.Fatalf("%q read as %v, but encoding/json refuses it: %v", b, got, jerr)
		case err != nil && jerr == nil:
			t.Fatalf("%q refused (%v), but encoding/json reads %v", b, err, want)
		case err == nil && !maps.Equal(got, want):
			t.Fatalf("%q read as %v, encoding/json reads %v", b, got, want)
		}
	})
}
