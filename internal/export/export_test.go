package export_test

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/rubric"
)

func TestNeutralise(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`=HYPERLINK("http://x","y")`, `'=HYPERLINK("http://x","y")`},
		{"@SUM(A1)", "'@SUM(A1)"},
		{"+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"},
		{"-2+3+cmd", "'-2+3+cmd"},
		{"\t=1", "'\t=1"},
		{"\r=1", "'\r=1"},
		{"'quoted", "''quoted"},
		{"-", "'-"},
		{"-e5", "'-e5"},
		// Plain numbers are not formulas.
		{"-2", "-2"},
		{"+1.5", "+1.5"},
		{"-0.25e-3", "-0.25e-3"},
		{"-.5", "-.5"},
		// Harmless text stays as it is.
		{"", ""},
		{"fine = fine", "fine = fine"},
		{"naïve “quotes”", "naïve “quotes”"},
		{"4", "4"},
	} {
		got := export.Neutralise(tc.in)
		if got != tc.want {
			t.Errorf("Neutralise(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if back := export.Restore(got); back != tc.in && got != tc.in {
			t.Errorf("Restore(%q) = %q, want %q", got, back, tc.in)
		}
	}
}

func FuzzNeutraliseRestore(f *testing.F) {
	for _, s := range []string{"=1", "'x", "''", "-2", "@", "plain", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := export.Neutralise(s)
		if n != "" && strings.ContainsRune("=+-@\t\r", rune(n[0])) && !strings.ContainsAny(n[1:], "0123456789") {
			t.Fatalf("Neutralise(%q) = %q still starts a formula", s, n)
		}
		// A neutralised cell is restored; an untouched one never starts
		// with an apostrophe, so Restore leaves it.
		if n != s {
			if export.Restore(n) != s {
				t.Fatalf("Restore(Neutralise(%q)) = %q", s, export.Restore(n))
			}
		} else if strings.HasPrefix(s, "'") {
			t.Fatalf("Neutralise(%q) left a leading apostrophe, so Restore cannot be exact", s)
		}
	})
}

// tricky are texts that CSV and JSON must carry unchanged.
var tricky = []string{
	"plain",
	"a, comma",
	`a "quoted" word`,
	"two\nlines",
	"trailing space ",
	"ünïcödé — “smart” 😀 日本語",
	"",
	"=HYPERLINK(\"x\")",
	"@SUM(A1)",
	"\u2028 separators \u2029",
	"control \x01 char",
}

func labels() []export.Label {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891234000, time.UTC)
	var out []export.Label
	for i, s := range tricky {
		out = append(out, export.Label{ItemID: "item," + s, System: []string{"v1", "", "=v2"}[i%3], Rater: "ann@example.org", RaterKind: "human", RubricItem: "emotion",
			Value: []string{"1", "5", "YES", "NA", "ERROR"}[i%5], Rationale: s, ActiveMS: int64(i * 1000), CreatedAt: at.Add(time.Duration(i) * time.Second)})
	}
	out = append(out, export.Label{ItemID: "j1", Rater: "=judge", RaterKind: "judge", RubricItem: "CQ8", Value: "ERROR",
		Rationale: "-1", ActiveMS: 0, CreatedAt: at, Method: "error"})
	out = append(out, export.Label{ItemID: "j2", Rater: "ann@example.org", RaterKind: "human", RubricItem: "CQ8", Value: "NO",
		CreatedAt: at, Evidence: []int{2, 5}}, export.Label{ItemID: "j2", Rater: "judge", RaterKind: "judge", RubricItem: "CQ8", Value: "NO",
		CreatedAt: at, Method: "structured", Evidence: []int{3}})
	return out
}

func TestLabelsCSVReadsBack(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w, err := export.NewLabelWriter(&b, export.CSV)
	if err != nil {
		t.Fatal(err)
	}
	want := labels()
	for i := range want {
		if err := w.Write(&want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if w.Rows() != len(want) {
		t.Fatalf("Rows = %d, want %d", w.Rows(), len(want))
	}
	if !utf8.Valid(b.Bytes()) || bytes.HasPrefix(b.Bytes(), []byte("\xef\xbb\xbf")) {
		t.Fatal("not UTF-8 without a byte order mark")
	}
	r := csv.NewReader(&b)
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(recs[0], ","); got != "item_id,system,rater,rater_kind,rubric_item,value,rationale,active_ms,created_at,method,evidence" {
		t.Fatalf("header = %s", got)
	}
	for i, rec := range recs[1:] {
		l := want[i]
		created, err := time.Parse(time.RFC3339Nano, rec[8])
		if err != nil || !created.Equal(l.CreatedAt) {
			t.Errorf("row %d created_at %q = %v, %v; want %v", i, rec[8], created, err, l.CreatedAt)
		}
		got := []string{export.Restore(rec[0]), export.Restore(rec[1]), export.Restore(rec[2]), rec[3], rec[4], rec[5], export.Restore(rec[6]), rec[7], rec[9], rec[10]}
		turns, problem := dataset.ParseTurns(rec[10])
		if problem != "" || !slices.Equal(turns, l.Evidence) {
			t.Errorf("row %d evidence %q reads as %v (%s), want %v", i, rec[10], turns, problem, l.Evidence)
		}
		wantRec := []string{l.ItemID, l.System, l.Rater, l.RaterKind, l.RubricItem, l.Value, l.Rationale, itoa(l.ActiveMS), l.Method, dataset.FormatTurns(l.Evidence)}
		if strings.Join(got, "|") != strings.Join(wantRec, "|") {
			t.Errorf("row %d = %q, want %q", i, got, wantRec)
		}
	}
	// The payloads reach a spreadsheet as text; a plain negative number as
	// a number.
	last := recs[len(recs)-3]
	if last[2] != "'=judge" || last[6] != "-1" {
		t.Fatalf("rater %q, rationale %q: want the formula neutralised and the number kept", last[2], last[6])
	}
	for _, rec := range recs[1:] {
		for _, cell := range rec {
			if cell != "" && strings.ContainsRune("=+@\t\r", rune(cell[0])) {
				t.Fatalf("cell %q would run as a formula", cell)
			}
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestLabelsJSONL(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	w, err := export.NewLabelWriter(&b, export.JSONL)
	if err != nil {
		t.Fatal(err)
	}
	want := labels()
	for i := range want {
		if err := w.Write(&want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&b)
	i := 0
	for sc.Scan() {
		var got struct {
			ItemID    string  `json:"item_id"`
			System    *string `json:"system"`
			Rater     string  `json:"rater"`
			Rationale string  `json:"rationale"`
			ActiveMS  int64   `json:"active_ms"`
			CreatedAt string  `json:"created_at"`
			Method    *string `json:"method"`
			Evidence  []int   `json:"evidence"`
		}
		var all map[string]any
		if err := json.Unmarshal(sc.Bytes(), &all); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, sc.Text())
		}
		if len(all) != len(export.LabelColumns) {
			t.Fatalf("line %d has %d fields", i+1, len(all))
		}
		json.Unmarshal(sc.Bytes(), &got)
		l := want[i]
		if got.ItemID != l.ItemID || got.Rater != l.Rater || got.Rationale != l.Rationale || got.ActiveMS != l.ActiveMS {
			t.Errorf("line %d = %+v, want %+v", i+1, got, l)
		}
		if got.Evidence == nil || !slices.Equal(got.Evidence, l.Evidence) && len(l.Evidence) > 0 {
			t.Errorf("line %d evidence = %v, want %v (an empty list when none)", i+1, got.Evidence, l.Evidence)
		}
		if (l.System == "") != (got.System == nil) || got.System != nil && *got.System != l.System {
			t.Errorf("line %d system = %v, want %q (null when empty)", i+1, got.System, l.System)
		}
		if (l.Method == "") != (got.Method == nil) {
			t.Errorf("line %d method = %v, want %q (null when empty)", i+1, got.Method, l.Method)
		}
		i++
	}
	if i != len(want) {
		t.Fatalf("%d lines, want %d", i, len(want))
	}
}

// TestJSONStringsMatchEncodingJSON checks the hand-written JSON string
// writer against encoding/json on awkward text.
func TestJSONStringsMatchEncodingJSON(t *testing.T) {
	t.Parallel()
	for _, s := range append(tricky, "\xff invalid", "tab\there", `back\slash`, "</script>") {
		var b bytes.Buffer
		tab, _ := export.NewTable(&b, export.JSONL, []export.Column{{Name: "x", Kind: export.Text}})
		tab.Write([]export.Cell{{S: s}})
		tab.Flush()
		var got struct{ X string }
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("%q: %v: %s", s, err, b.String())
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		if got.X != want {
			t.Errorf("%q read back as %q", s, got.X)
		}
	}
}

func TestGoldWriter(t *testing.T) {
	t.Parallel()
	def, err := rubric.Builtin("coaching-conversation@2.0")
	if err != nil {
		t.Fatal(err)
	}
	yes := map[string]string{}
	for _, it := range def.Items {
		yes[it.Key] = "YES"
	}
	failing := map[string]string{}
	for k, v := range yes {
		failing[k] = v
	}
	failing["CQ8"] = "NO"
	// Three rubric items agree, one does not, one has a single answer
	// and ERROR is no answer: 3 of 4 rubric items with two answers.
	human := map[string][]string{"CQ1": {"YES", "YES", "ERROR"}, "CQ2": {"NA", "NA"}, "CQ3": {"YES", "YES", "YES"},
		"CQ4": {"YES", "NO"}, "CQ5": {"NO", "ERROR"}}
	raters := []export.Rater{{ID: 7, Kind: "human", Name: "ann@example.org"}, {ID: 9, Kind: "judge", Name: "@judge"}}
	var b bytes.Buffer
	w, err := export.NewGoldWriter(&b, export.CSV, def, raters)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, it := range []export.GoldItem{
		{ItemID: "c1", System: "v1", Gold: yes, Method: "automatic", Note: "CQ1: unanimous", HumanRaters: 3, Human: human, DecidedAt: at,
			Ratings: map[int64]map[string]string{7: {"CQ1": "YES"}, 9: {"CQ1": "ERROR"}}},
		{ItemID: "c2", Gold: failing, Method: "adjudicated", DecidedBy: "lee@example.org", Note: "=unsafe", HumanRaters: 2, DecidedAt: at},
		{ItemID: "c3", HumanRaters: 1},
	} {
		if err := w.Write(&it); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range recs[0] {
		col[name] = i
	}
	if len(recs[0]) != 3+12+10+2*12 {
		t.Fatalf("%d columns: %v", len(recs[0]), recs[0])
	}
	if _, ok := col["judge:@judge:CQ1"]; !ok {
		t.Fatalf("no rater column in %v", recs[0])
	}
	get := func(row int, name string) string { return recs[row][col[name]] }
	for _, c := range []struct {
		row        int
		name, want string
	}{
		{1, "system", "v1"}, {2, "system", ""}, {1, "rubric", "coaching-conversation@2.0"}, {1, "gold_CQ8", "YES"}, {1, "score", "1"}, {1, "pass", "true"},
		{1, "safety_gate_failed", "false"}, {1, "failed_checks", ""}, {1, "decided", "automatic"}, {1, "decided_by", "rule"},
		{1, "agreement", "0.7500"}, {1, "human_raters", "3"}, {1, "human:ann@example.org:CQ1", "YES"}, {1, "judge:@judge:CQ1", "ERROR"},
		{1, "decided_at", "2026-01-02T03:04:05.000000Z"},
		{2, "gold_CQ8", "NO"}, {2, "pass", "false"}, {2, "safety_gate_failed", "true"}, {2, "failed_checks", "CQ8"},
		{2, "decided", "adjudicated"}, {2, "decided_by", "lee@example.org"}, {2, "note", "'=unsafe"}, {2, "agreement", ""},
		{3, "decided", "open"}, {3, "score", ""}, {3, "gold_CQ1", ""}, {3, "decided_at", ""},
	} {
		if got := get(c.row, c.name); got != c.want {
			t.Errorf("row %d %s = %q, want %q", c.row, c.name, got, c.want)
		}
	}
	// CQ8 NO: one check of a weighted category fails, and the gate.
	if s := get(2, "score"); s != "0.9" {
		t.Errorf("score with CQ8 NO = %s, want 0.9", s)
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]export.Format{"": export.CSV, "csv": export.CSV, "JSONL": export.JSONL, "ndjson": export.JSONL} {
		if got, err := export.ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := export.ParseFormat("xlsx"); err == nil {
		t.Error("xlsx accepted")
	}
}

// TestAgreement: the gold export's agreement of an item is percent
// agreement over its rubric items, ERROR no answer, and none at all
// without a rubric item of two answers.
func TestAgreement(t *testing.T) {
	for _, tc := range []struct {
		human map[string][]string
		want  float64
		ok    bool
	}{
		{nil, 0, false},
		{map[string][]string{"CQ1": {"YES"}, "CQ2": {"YES", "ERROR"}}, 0, false},
		{map[string][]string{"CQ1": {"ERROR", "ERROR"}}, 0, false},
		{map[string][]string{"CQ1": {"YES", "YES"}}, 1, true},
		// One agreeing pair of three, and a rubric item that agrees.
		{map[string][]string{"CQ1": {"YES", "NO", "YES"}, "CQ2": {"NA", "NA"}}, (1.0/3 + 1) / 2, true},
		{map[string][]string{"overall": {"1", "2", "3", "4"}, "safety": {"4", "4", "4", "1"}}, (0 + 0.5) / 2, true},
	} {
		got, ok, err := export.Agreement(tc.human)
		if err != nil || ok != tc.ok || math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Agreement(%v) = %v, %v, %v; want %v, %v", tc.human, got, ok, err, tc.want, tc.ok)
		}
	}
}
