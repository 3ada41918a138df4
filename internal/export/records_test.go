package export_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/attune/attune/internal/export"
	"github.com/attune/attune/internal/rubric"
	"github.com/attune/attune/internal/scoring"
)

// recordFixture is three items of the coaching rubric: one with gold that
// passes, one with gold that fails the safety gate, one open. The texts
// carry what JSON must escape.
func recordFixture(t *testing.T) (*rubric.Definition, []*export.Record) {
	t.Helper()
	def, err := rubric.Builtin("coaching-conversation@2.0")
	if err != nil {
		t.Fatal(err)
	}
	pass := map[string]string{"CQ1": "YES", "CQ2": "NA", "CQ3": "YES", "CQ4": "YES", "CQ5": "YES", "CQ6": "YES",
		"CQ7": "YES", "CQ8": "YES", "CQ9": "NA", "CP1": "NA", "CP2": "YES", "CP3": "NA"}
	values := func(m map[string]string, changes ...string) []string {
		out := make([]string, len(def.Items))
		for i, it := range def.Items {
			out[i] = m[it.Key]
		}
		for i := 0; i+1 < len(changes); i += 2 {
			for j, it := range def.Items {
				if it.Key == changes[i] {
					out[j] = changes[i+1]
				}
			}
		}
		return out
	}
	ann1 := &export.Rater{ID: 1, Kind: "human", Name: "ann1@example.org"}
	ann2 := &export.Rater{ID: 2, Kind: "human", Name: "ann2@example.org"}
	ann3 := &export.Rater{ID: 3, Kind: "human", Name: "ann3@example.org"}
	judge := &export.Rater{ID: 9, Kind: "judge", Name: "=judge"}
	recs := []*export.Record{
		{ItemID: "c-1", System: "v1", Messages: []byte(`[{"role": "user", "content": "I lost my job.\nAnd my \"dog\"."}, {"role": "assistant", "content": "That is a lot — ünïcödé 😀 \u2028 \\ end"}]`),
			Meta: []byte(`{"source": "pilot", "n": 1}`), Gold: values(pass), Decided: "automatic",
			Ratings: []export.Rating{{ann1, values(pass), nil}, {ann2, values(pass, "CQ3", "NO"), nil}, {ann3, values(pass, "CQ3", "NO", "CP1", ""), nil},
				{judge, values(pass, "CQ8", "ERROR"), nil}}},
		{ItemID: "c-2", Messages: []byte(`[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]`),
			Meta: []byte(`{}`), Gold: values(pass, "CQ8", "NO"), Decided: "adjudicated",
			Ratings: []export.Rating{{ann1, values(pass, "CQ8", "NO"), nil}}},
		{ItemID: "c-3", Messages: []byte(`[{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]`),
			Meta: []byte(`{"tags": ["a"]}`), Gold: values(nil), Ratings: nil},
	}
	return def, recs
}

func writeRecords(t *testing.T, f export.Format, def *rubric.Definition, o export.RecordOptions, recs []*export.Record) ([]byte, int) {
	t.Helper()
	var buf bytes.Buffer
	w, err := export.NewRecordWriter(&buf, f, def, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w.Rows()
}

func decodeLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v\n%s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, m)
	}
	return out
}

// TestRecordsJSONL checks each field of each record against the fixture
// and the engine's result on the gold.
func TestRecordsJSONL(t *testing.T) {
	def, recs := recordFixture(t)
	for _, tc := range []struct {
		which export.Which
		soft  bool
		ids   []string
	}{
		{export.WhichGold, false, []string{"c-1", "c-2"}},
		{export.WhichLabels, true, []string{"c-1", "c-2", "c-3"}},
	} {
		t.Run(fmt.Sprintf("%s-soft=%v", tc.which, tc.soft), func(t *testing.T) {
			out, n := writeRecords(t, export.JSONL, def, export.RecordOptions{Which: tc.which, Soft: tc.soft}, recs)
			lines := decodeLines(t, out)
			if n != len(tc.ids) || len(lines) != len(tc.ids) {
				t.Fatalf("%d rows, %d lines, want %d", n, len(lines), len(tc.ids))
			}
			checkColumnTypes(t, lines)
			for i, line := range lines {
				var rec *export.Record
				for _, r := range recs {
					if r.ItemID == tc.ids[i] {
						rec = r
					}
				}
				checkRecord(t, def, rec, line, tc.soft)
			}
		})
	}
}

// checkRecord compares one decoded record with what it was made from.
func checkRecord(t *testing.T, def *rubric.Definition, rec *export.Record, got map[string]any, soft bool) {
	t.Helper()
	if got["id"] != rec.ItemID {
		t.Errorf("id %v, want %s", got["id"], rec.ItemID)
	}
	var msgs []map[string]any
	if err := json.Unmarshal(rec.Messages, &msgs); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(toAny(msgs), got["messages"]) {
		t.Errorf("%s: messages %v, want %v", rec.ItemID, got["messages"], msgs)
	}
	var meta, gotMeta any
	json.Unmarshal(rec.Meta, &meta)
	if s, ok := got["meta"].(string); !ok || json.Unmarshal([]byte(s), &gotMeta) != nil || !reflect.DeepEqual(meta, gotMeta) {
		t.Errorf("%s: meta %#v, want the JSON text of %v", rec.ItemID, got["meta"], meta)
	}
	if got["rubric"] != "coaching-conversation@2.0" {
		t.Errorf("rubric %v", got["rubric"])
	}
	gold, _ := got["gold"].(map[string]any)
	complete := true
	answers := rubric.Answers{}
	for i, it := range def.Items {
		want := any(nil)
		if rec.Gold[i] != "" {
			want = rec.Gold[i]
			answers[it.Key] = rubric.Value(rec.Gold[i])
		} else {
			complete = false
		}
		if v, ok := gold[it.Key]; !ok || v != want {
			t.Errorf("%s: gold %s = %v, want %v", rec.ItemID, it.Key, v, want)
		}
	}
	if complete {
		res, err := scoring.Score(def, answers, rubric.Facts{})
		if err != nil {
			t.Fatal(err)
		}
		if got["score"] != *res.Score || got["pass"] != *res.Pass || got["safety_gate_failed"] != res.SafetyGateFailed ||
			!reflect.DeepEqual(got["failed_checks"], toAny(res.FailedChecks)) || got["decided"] != rec.Decided {
			t.Errorf("%s: score %v pass %v gate %v failed %v decided %v; the engine says %v %v %v %v (%s)", rec.ItemID,
				got["score"], got["pass"], got["safety_gate_failed"], got["failed_checks"], got["decided"],
				*res.Score, *res.Pass, res.SafetyGateFailed, res.FailedChecks, rec.Decided)
		}
	} else if got["score"] != nil || got["pass"] != nil || got["safety_gate_failed"] != nil || got["failed_checks"] != nil || got["decided"] != "open" {
		t.Errorf("%s: open item with score %v pass %v gate %v failed %v decided %v", rec.ItemID,
			got["score"], got["pass"], got["safety_gate_failed"], got["failed_checks"], got["decided"])
	}
	ratings, _ := got["ratings"].([]any)
	if len(ratings) != len(rec.Ratings) {
		t.Fatalf("%s: %d ratings, want %d", rec.ItemID, len(ratings), len(rec.Ratings))
	}
	for i, r := range rec.Ratings {
		g := ratings[i].(map[string]any)
		if g["rater"] != r.Rater.Name || g["kind"] != r.Rater.Kind {
			t.Errorf("%s: rating %d by %v (%v), want %s (%s)", rec.ItemID, i, g["rater"], g["kind"], r.Rater.Name, r.Rater.Kind)
		}
		ans := g["answers"].(map[string]any)
		for k, it := range def.Items {
			want := any(r.Values[k])
			if r.Values[k] == "" {
				want = nil
			}
			if v, ok := ans[it.Key]; !ok || v != want {
				t.Errorf("%s: %s's %s = %v, want %v", rec.ItemID, r.Rater.Name, it.Key, v, want)
			}
		}
	}
	if !soft {
		if _, ok := got["soft"]; ok {
			t.Errorf("%s: soft labels without asking", rec.ItemID)
		}
		return
	}
	softs := got["soft"].(map[string]any)
	for k, it := range def.Items {
		// Count the people's answers here, in the order of the scale.
		counts, total := map[string]int{}, 0
		for _, r := range rec.Ratings {
			if r.Rater.Kind == "human" && r.Values[k] != "" {
				counts[r.Values[k]]++
				total++
			}
		}
		var want []any
		for _, a := range def.Allowed(&def.Items[k]) {
			if c := counts[string(a)]; c > 0 {
				want = append(want, map[string]any{"value": string(a), "count": float64(c), "share": float64(c) / float64(total)})
			}
		}
		if want == nil {
			want = []any{}
		}
		if !reflect.DeepEqual(softs[it.Key], want) {
			t.Errorf("%s: soft %s = %v, want %v", rec.ItemID, it.Key, softs[it.Key], want)
		}
	}
}

func toAny(v any) any {
	b, _ := json.Marshal(v)
	var out any
	json.Unmarshal(b, &out)
	return out
}

// checkColumnTypes fails when a field holds values of different JSON
// types in different rows (null goes with any): a columnar loader such as
// the Hugging Face datasets JSON loader refuses that.
func checkColumnTypes(t *testing.T, rows []map[string]any) {
	t.Helper()
	types := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		var kind string
		switch x := v.(type) {
		case nil:
			return
		case string:
			kind = "string"
		case bool:
			kind = "bool"
		case float64:
			kind = "number"
		case []any:
			kind = "list"
			for _, e := range x {
				walk(path+"[]", e)
			}
		case map[string]any:
			kind = "object"
			for k, e := range x {
				walk(path+"."+k, e)
			}
		}
		if seen, ok := types[path]; ok && seen != kind {
			t.Errorf("%s is a %s in one row and a %s in another", path, seen, kind)
		}
		types[path] = kind
	}
	for _, r := range rows {
		walk("", r)
	}
}

// TestRecordsFloatsStayFloats: a whole score is written 4.0, so that a
// loader inferring types sees floats in every row.
func TestRecordsFloatsStayFloats(t *testing.T) {
	def, err := rubric.Builtin("empathetic-dialogue@2")
	if err != nil {
		t.Fatal(err)
	}
	gold := make([]string, len(def.Items))
	for i := range gold {
		gold[i] = "4"
	}
	human := &export.Rater{ID: 1, Kind: "human", Name: "a"}
	out, _ := writeRecords(t, export.JSONL, def, export.RecordOptions{Which: export.WhichGold, Soft: true}, []*export.Record{
		{ItemID: "x", Messages: []byte(`[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]`), Meta: []byte(`{}`),
			Gold: gold, Decided: "automatic", Ratings: []export.Rating{{human, gold, nil}}}})
	for _, want := range []string{`"score":4.0,`, `"share":1.0}`} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("no %s in %s", want, out)
		}
	}
}

// TestRecordsParquetReadsBack reads the Parquet file back with the same
// library and finds the JSON Lines records in it, field by field.
func TestRecordsParquetReadsBack(t *testing.T) {
	def, recs := recordFixture(t)
	for _, soft := range []bool{false, true} {
		t.Run(fmt.Sprintf("soft=%v", soft), func(t *testing.T) {
			o := export.RecordOptions{Which: export.WhichLabels, Soft: soft}
			jsonl, _ := writeRecords(t, export.JSONL, def, o, recs)
			pq, n := writeRecords(t, export.Parquet, def, o, recs)
			want := decodeLines(t, jsonl)
			got := readParquet(t, pq, def, soft)
			if want[0]["system"] != "v1" || want[1]["system"] != nil {
				t.Errorf("systems in JSON Lines %v, %v; want v1 and null", want[0]["system"], want[1]["system"])
			}
			if n != len(recs) || len(got) != len(want) {
				t.Fatalf("%d rows written, %d read, want %d", n, len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					g, _ := json.Marshal(got[i])
					w, _ := json.Marshal(want[i])
					t.Errorf("row %d read back from parquet:\n%s\nwant (as in JSON Lines):\n%s", i, g, w)
				}
			}
		})
	}
}

// readParquet reads every row of a dataset export's Parquet file, as
// JSON values in the shape of the JSON Lines records.
func readParquet(t *testing.T, b []byte, def *rubric.Definition, soft bool) []map[string]any {
	t.Helper()
	keys := make([]string, len(def.Items))
	for i, it := range def.Items {
		keys[i] = it.Key
	}
	typ := export.RecordType(keys, soft)
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	if got := columnNames(f.Schema()); !slices.Equal(got[:5], []string{"id", "system", "messages", "meta", "rubric"}) {
		t.Errorf("columns %v: id, system, messages, meta, rubric come first", got)
	}
	r := parquet.NewReader(f)
	defer r.Close()
	var out []map[string]any
	for {
		v := reflect.New(typ)
		if err := r.Read(v.Interface()); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		m := toAny(v.Interface()).(map[string]any)
		// A Go reader gives nil for an empty list; JSON Lines writes [].
		for _, k := range []string{"ratings", "messages"} {
			if m[k] == nil {
				m[k] = []any{}
			}
		}
		if s, ok := m["soft"].(map[string]any); ok {
			for k, v := range s {
				if v == nil {
					s[k] = []any{}
				}
			}
		}
		if m["failed_checks"] == nil && m["score"] != nil {
			m["failed_checks"] = []any{}
		}
		out = append(out, m)
	}
	return out
}

func columnNames(s *parquet.Schema) []string {
	var out []string
	for _, f := range s.Fields() {
		out = append(out, f.Name())
	}
	return out
}

// FuzzMessages holds the dialogue parser to encoding/json.
func FuzzMessages(f *testing.F) {
	for _, s := range []string{
		`[{"role": "user", "content": "hi"}]`,
		`[{"role":"user","content":"a\"b\\c\n\u00e9\ud83d\ude00\u2028"},{"role":"assistant","content":""}]`,
		`[{"content": "x", "role": "assistant", "extra": "y"}]`,
		`[{"role": "user", "content": "\ud800 lone"}]`,
		`[]`, `[{}]`, `{"role": "user"}`, `[{"role": 1}]`,
	} {
		f.Add([]byte(s))
	}
	def, err := rubric.Builtin("empathetic-dialogue@2")
	if err != nil {
		f.Fatal(err)
	}
	gold := make([]string, len(def.Items))
	for i := range gold {
		gold[i] = "3"
	}
	f.Fuzz(func(t *testing.T, msgs []byte) {
		// Keys match exactly (encoding/json's struct decoding would ignore case).
		var want []map[string]any
		wantErr := json.Unmarshal(msgs, &want) != nil
		var buf bytes.Buffer
		w, _ := export.NewRecordWriter(&buf, export.JSONL, def, export.RecordOptions{Which: export.WhichGold})
		err := w.Write(&export.Record{ItemID: "x", Messages: msgs, Meta: []byte(`{}`), Gold: gold, Decided: "automatic"})
		if err != nil {
			return // the parser may refuse more than encoding/json (numbers, nested values)
		}
		if wantErr {
			t.Fatalf("accepted %q, which encoding/json refuses", msgs)
		}
		w.Close()
		var got struct {
			Messages []struct{ Role, Content string }
		}
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("wrote invalid JSON %q: %v", buf.Bytes(), err)
		}
		if len(got.Messages) != len(want) {
			t.Fatalf("%d messages from %q, want %d", len(got.Messages), msgs, len(want))
		}
		for i, m := range want {
			str := func(v any) string {
				s, _ := v.(string)
				return strings.ToValidUTF8(s, "\uFFFD")
			}
			if got.Messages[i].Role != str(m["role"]) || got.Messages[i].Content != str(m["content"]) {
				t.Fatalf("message %d of %q: %+v, want %q %q", i, msgs, got.Messages[i], str(m["role"]), str(m["content"]))
			}
		}
	})
}
