package dataset_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/rubric"
)

// TestLastLineBroken shows the contract a caller must honour: Read hands
// on batches before it reaches a broken line, then returns the error, so
// whatever the caller stored must be rolled back.
func TestLastLineBroken(t *testing.T) {
	var ls []string
	for i := range 5 {
		ls = append(ls, item(fmt.Sprintf(`"ok-%d"`, i), u, a))
	}
	ls = append(ls, item(`"bad"`, u, `{"role": "bot", "content": "Hi."}`))
	var batches [][]string
	sum, err := dataset.Read(strings.NewReader(lines(ls...)), dataset.Options{BatchSize: 2}, func(batch []dataset.Item) error {
		var ids []string
		for _, it := range batch {
			ids = append(ids, it.SourceID)
		}
		batches = append(batches, ids)
		return nil
	})
	want := `line 6: messages[1].role: unknown role "bot": use user, assistant or system`
	if err == nil || err.Error() != want {
		t.Fatalf("got error %v, want %s", err, want)
	}
	// The fifth item waited for a full batch and was never handed on.
	if wantB := [][]string{{"ok-0", "ok-1"}, {"ok-2", "ok-3"}}; !reflect.DeepEqual(batches, wantB) {
		t.Errorf("emit got %v, want %v before the error", batches, wantB)
	}
	if sum.Items != 5 || sum.Lines != 6 {
		t.Errorf("Summary %+v, want 5 items, 6 lines", sum)
	}
}

// TestNoEmitAfterError checks that good lines after a broken one are read
// (and checked) but not handed on.
func TestNoEmitAfterError(t *testing.T) {
	in := lines(item(`"a"`, u), item(`"b"`, u, a), item(`"b"`, u, a), item(`"c"`, u, a))
	items, sum, err := readAll(t, []byte(in), dataset.Options{BatchSize: 1})
	want := "line 1: messages: no assistant message; an item needs an assistant reply to rate\n" +
		`line 3: id: "b" already used on line 2`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want\n%s", err, want)
	}
	if len(items) != 0 {
		t.Errorf("emit got %d items after the first error", len(items))
	}
	if sum.Items != 2 {
		t.Errorf("Summary.Items = %d, want 2 (b and c passed their checks)", sum.Items)
	}
}

// TestBatches checks the batch sizes and that the final partial batch
// comes last.
func TestBatches(t *testing.T) {
	var ls []string
	for i := range 10 {
		ls = append(ls, item(fmt.Sprint(i), u, a))
	}
	var sizes []int
	_, err := dataset.Read(strings.NewReader(lines(ls...)), dataset.Options{BatchSize: 3}, func(b []dataset.Item) error {
		sizes = append(sizes, len(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 3, 3, 1}; !reflect.DeepEqual(sizes, want) {
		t.Errorf("batch sizes %v, want %v", sizes, want)
	}
}

// TestEmitError checks that an error from emit stops Read and comes back
// unchanged.
func TestEmitError(t *testing.T) {
	var ls []string
	for i := range 10 {
		ls = append(ls, item(fmt.Sprint(i), u, a))
	}
	stop := errors.New("database is gone")
	calls := 0
	sum, err := dataset.Read(strings.NewReader(lines(ls...)), dataset.Options{BatchSize: 2}, func([]dataset.Item) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if err != stop {
		t.Fatalf("got %v, want emit's error unchanged", err)
	}
	if calls != 2 || sum.Lines != 4 {
		t.Errorf("emit called %d times, %d lines read; want 2 and 4", calls, sum.Lines)
	}
}

// TestReadFailure checks that a failing reader is an error of its own, not
// a problem of the file.
func TestReadFailure(t *testing.T) {
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader(lines(item(`"a"`, u, a))), iotest.ErrReader(boom))
	for _, f := range []dataset.Format{dataset.JSONL, dataset.CSV} {
		_, err := dataset.Read(r, dataset.Options{Format: f}, func([]dataset.Item) error { return nil })
		var errs *dataset.Errors
		if !errors.Is(err, boom) || errors.As(err, &errs) {
			t.Errorf("%s: got %v, want the read error wrapped", f, err)
		}
		r = iotest.ErrReader(boom)
	}
	_, err := dataset.Read(iotest.ErrReader(boom), dataset.Options{}, func([]dataset.Item) error { return nil })
	if !errors.Is(err, boom) {
		t.Errorf("while detecting: got %v, want the read error wrapped", err)
	}
}

// TestBadOptions checks that options Read cannot honour fail before
// anything is read.
func TestBadOptions(t *testing.T) {
	for _, opts := range []dataset.Options{{Unit: "turn"}, {Format: "xlsx"}} {
		_, err := dataset.Read(strings.NewReader(lines(item(`"a"`, u, a))), opts, func([]dataset.Item) error {
			t.Error("emit called")
			return nil
		})
		var errs *dataset.Errors
		if err == nil || errors.As(err, &errs) {
			t.Errorf("%+v: got %v, want an error about the options", opts, err)
		}
	}
}

func msgs(pairs ...string) []dataset.Message {
	var out []dataset.Message
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, dataset.Message{Role: pairs[i], Content: pairs[i+1]})
	}
	return out
}

// TestIrregular checks that irregular dialogues import exactly as they
// are, with their turns counted as the rubrics count them.
func TestIrregular(t *testing.T) {
	in := lines(
		// Opens with an assistant greeting.
		`{"id": "greet", "messages": [{"role": "assistant", "content": "Hi! What's up?"}, {"role": "user", "content": "Rough day."}, {"role": "assistant", "content": "Tell me about it."}]}`,
		// Ends with the user: fine for a conversation rubric.
		`{"id": "open", "turns": [{"role": "user", "text": "Rough day."}, {"role": "assistant", "text": "Tell me."}, {"role": "user", "text": "Later maybe."}]}`,
		// One role several times in a row.
		`{"id": "runs", "messages": [{"role": "user", "content": "One."}, {"role": "user", "content": "Two."}, {"role": "assistant", "content": "I hear you."}, {"role": "assistant", "content": "Go on."}, {"role": "user", "content": "Three."}, {"role": "assistant", "content": "Yes."}]}`,
		// System messages kept where they are.
		`{"id": "sys", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi."}, {"role": "system", "content": "Context."}, {"role": "assistant", "content": "Hello."}]}`,
		// No user at all: nothing to count as a turn, still an assistant reply.
		`{"id": "solo", "messages": [{"role": "assistant", "content": "Welcome back."}]}`,
	)
	items, _, err := readAll(t, []byte(in), dataset.Options{Unit: rubric.Conversation})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id    string
		kind  dataset.Kind
		turns int
		msgs  []dataset.Message
	}{
		{"greet", dataset.Conversation, 1, msgs("assistant", "Hi! What's up?", "user", "Rough day.", "assistant", "Tell me about it.")},
		{"open", dataset.Conversation, 1, msgs("user", "Rough day.", "assistant", "Tell me.", "user", "Later maybe.")},
		{"runs", dataset.Conversation, 2, msgs("user", "One.", "user", "Two.", "assistant", "I hear you.", "assistant", "Go on.", "user", "Three.", "assistant", "Yes.")},
		{"sys", dataset.Conversation, 1, msgs("system", "Be brief.", "user", "Hi.", "system", "Context.", "assistant", "Hello.")},
		{"solo", dataset.Conversation, 0, msgs("assistant", "Welcome back.")},
	}
	if len(items) != len(want) {
		t.Fatalf("got %d items, want %d", len(items), len(want))
	}
	for i, w := range want {
		it := items[i]
		if it.SourceID != w.id || it.Kind != w.kind || it.Turns != w.turns || !reflect.DeepEqual(it.Messages, w.msgs) || it.Line != i+1 {
			t.Errorf("item %d = %+v\nwant %+v", i, it, w)
		}
	}

	// The same file against a last-reply rubric refuses only the
	// conversation that ends with the user.
	_, _, err = readAll(t, []byte(in), dataset.Options{Unit: rubric.LastReply})
	if want := "line 2: turns: the rubric rates the last reply, but this conversation ends with a user message"; err == nil || err.Error() != want {
		t.Errorf("last reply: got %v, want %s", err, want)
	}
}

// TestItems checks the fields of items: ids, kinds, canonical meta,
// decoded text kept as written, line numbers across blank lines, CRLF and a
// byte-order mark.
func TestItems(t *testing.T) {
	in := "\xef\xbb\xbf\r\n" + strings.Join([]string{
		`{"id": 42, "messages": [{"role": "user", "content": "  caf\u00e9 \/ \ud83d\ude22 \ud800 tab\tend\n"}, {"role": "assistant", "content": "Ok."}]}`,
		`  {"meta" : { "z" : [ 1 , 2.50 , {"b": true, "a": null} ] , "a" : "\u003c\"x\"\u003e" } , "id": "-7", "messages": [{"content": "Hi.", "role": "user"}, {"role": "assistant", "content": "Hello."}]}  `,
		``,
		`{"id": -3, "messages": [{"role": "system", "content": "S."}, {"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}], "meta": {}}`,
	}, "\r\n") + "\r\n"
	items, sum, err := readAll(t, []byte(in), dataset.Options{Unit: rubric.LastReply})
	if err != nil {
		t.Fatal(err)
	}
	if sum != (dataset.Summary{Format: dataset.JSONL, Items: 3, Lines: 5}) {
		t.Errorf("Summary %+v", sum)
	}
	want := []struct {
		id, meta string
		kind     dataset.Kind
		line     int
		first    string
	}{
		{"42", `{}`, dataset.Reply, 2, "  café / 😢 \uFFFD tab\tend\n"},
		{"-7", `{"a":"<\"x\">","z":[1,2.50,{"a":null,"b":true}]}`, dataset.Reply, 3, "Hi."},
		{"-3", `{}`, dataset.Conversation, 5, "S."},
	}
	for i, w := range want {
		it := items[i]
		if it.SourceID != w.id || string(it.Meta) != w.meta || it.Kind != w.kind || it.Line != w.line || it.Messages[0].Content != w.first {
			t.Errorf("item %d: id %q meta %s kind %s line %d first %q\nwant  id %q meta %s kind %s line %d first %q",
				i, it.SourceID, it.Meta, it.Kind, it.Line, it.Messages[0].Content, w.id, w.meta, w.kind, w.line, w.first)
		}
	}
}

// TestDetect checks format detection.
func TestDetect(t *testing.T) {
	csvFile := "\xef\xbb\xbfResponse,ID,user\nHello.,r-1,Hi.\n"
	for _, tt := range []struct {
		name, input string
		want        dataset.Format
	}{
		{"JSONL after blank lines", "\n\n  \t" + lines(item(`"a"`, u, a)), dataset.JSONL},
		{"CSV with a BOM and any column order", csvFile, dataset.CSV},
		{"CSV opening with a quote", "\"id\",\"user\",\"response\"\nr-1,Hi.,Hello.\n", dataset.CSV},
	} {
		t.Run(tt.name, func(t *testing.T) {
			items, sum, err := readAll(t, []byte(tt.input), dataset.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Format != tt.want || len(items) != 1 {
				t.Errorf("format %s, %d items; want %s, 1", sum.Format, len(items), tt.want)
			}
		})
	}
	// A given format is not second-guessed.
	_, _, err := readAll(t, []byte(csvFile), dataset.Options{Format: dataset.JSONL})
	if want := `line 1: invalid JSON at byte 1: invalid character 'R' looking for beginning of value`; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %v, want %s…", err, want)
	}
}

// TestCSVItems checks a CSV record's item: user then assistant, text with
// commas, quotes and newlines as written, the line the record starts on.
func TestCSVItems(t *testing.T) {
	in := "id,user,response\n1,\"Hi, there.\nSecond line.\",\"He said \"\"no\"\".\"\n2,Hi.,Hello.\n"
	items, _, err := readAll(t, []byte(in), dataset.Options{Unit: rubric.Reply})
	if err != nil {
		t.Fatal(err)
	}
	want := []dataset.Item{
		{SourceID: "1", Kind: dataset.Reply, Messages: msgs("user", "Hi, there.\nSecond line.", "assistant", `He said "no".`), Meta: []byte("{}"), Turns: 1, Line: 2},
		{SourceID: "2", Kind: dataset.Reply, Messages: msgs("user", "Hi.", "assistant", "Hello."), Meta: []byte("{}"), Turns: 1, Line: 4},
	}
	for i := range want {
		want[i].SHA256, _ = dataset.Hash(want[i].Messages, want[i].Meta)
	}
	if !reflect.DeepEqual(items, want) {
		t.Errorf("got  %+v\nwant %+v", items, want)
	}
}

// TestCountTurns covers the rubric's definition of a turn on regular and
// irregular dialogues.
func TestCountTurns(t *testing.T) {
	const U, A, S = dataset.RoleUser, dataset.RoleAssistant, dataset.RoleSystem
	for _, tt := range []struct {
		name  string
		roles []string
		want  int
	}{
		{"empty", nil, 0},
		{"one exchange", []string{U, A}, 1},
		{"three exchanges", []string{U, A, U, A, U, A}, 3},
		{"only a user", []string{U}, 0},
		{"only an assistant", []string{A}, 0},
		{"opening greeting is not a turn", []string{A, U, A}, 1},
		{"trailing user is not a turn", []string{U, A, U}, 1},
		{"run of users is one", []string{U, U, U, A}, 1},
		{"run of assistants is one", []string{U, A, A, A}, 1},
		{"runs on both sides", []string{U, U, A, A, U, A, A, U}, 2},
		{"system messages ignored", []string{S, U, S, A, S}, 1},
		{"system between runs", []string{U, S, U, A, S, A}, 1},
		{"system only", []string{S, S}, 0},
		{"greeting, runs, trailing user", []string{A, A, U, U, A, U, A, U, U}, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ms []dataset.Message
			for _, r := range tt.roles {
				ms = append(ms, dataset.Message{Role: r, Content: "x"})
			}
			if got := dataset.CountTurns(ms); got != tt.want {
				t.Errorf("CountTurns(%v) = %d, want %d", tt.roles, got, tt.want)
			}
		})
	}
}

// TestTurnNumbers: every message's turn, by CountTurns' definition, so
// that a page never numbers a message past the turns the rubric counts.
func TestTurnNumbers(t *testing.T) {
	const U, A, S = dataset.RoleUser, dataset.RoleAssistant, dataset.RoleSystem
	for _, tt := range []struct {
		name  string
		roles []string
		want  []int
	}{
		{"one exchange", []string{U, A}, []int{1, 1}},
		{"three exchanges", []string{U, A, U, A, U, A}, []int{1, 1, 2, 2, 3, 3}},
		{"only a user", []string{U}, []int{0}},
		{"opening greeting is not a turn", []string{A, U, A}, []int{0, 1, 1}},
		{"trailing user is not a turn", []string{U, A, U}, []int{1, 1, 0}},
		{"runs share their turn", []string{U, U, A, A, U, A, A, U}, []int{1, 1, 1, 1, 2, 2, 2, 0}},
		{"system messages have none", []string{S, U, S, A, S}, []int{0, 1, 0, 1, 0}},
		{"greeting, runs, trailing users", []string{A, A, U, U, A, U, A, U, U}, []int{0, 0, 1, 1, 1, 2, 2, 0, 0}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ms []dataset.Message
			for _, r := range tt.roles {
				ms = append(ms, dataset.Message{Role: r, Content: "x"})
			}
			got := dataset.TurnNumbers(ms)
			if !slices.Equal(got, tt.want) {
				t.Errorf("TurnNumbers(%v) = %v, want %v", tt.roles, got, tt.want)
			}
			if n := slices.Max(append([]int{0}, got...)); n != dataset.CountTurns(ms) {
				t.Errorf("the last number %d is not the turn count %d", n, dataset.CountTurns(ms))
			}
		})
	}
}

// TestOneByteReads checks that Read needs only an
// io.Reader: one byte at a time gives the same items.
func TestOneByteReads(t *testing.T) {
	for _, name := range []string{"testdata/good/messages.jsonl", "testdata/good/replies.csv"} {
		data := mustRead(t, name)
		want, _, err := readAll(t, data, dataset.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []dataset.Item
		_, err = dataset.Read(iotest.OneByteReader(bytes.NewReader(data)), dataset.Options{}, func(b []dataset.Item) error {
			got = append(got, b...)
			return nil
		})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: one byte at a time gives %v, %v", name, len(got), err)
		}
	}
}

// TestBinaryFileRefused: a file that is no text (an archive, a document,
// anything holding NUL bytes) is refused as such on line 1, whatever its
// name says, instead of being read as CSV columns of garbage; nothing of it
// is handed on.
func TestBinaryFileRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		data, want string
	}{
		"xlsx":  {"PK\x03\x04\x14\x00\x06\x00rest of an archive", "a ZIP archive"},
		"gzip":  {"\x1f\x8b\x08\x00\x00\x00\x00\x00", "gzip-compressed"},
		"pdf":   {"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "a PDF document"},
		"bytes": {"id,messages\x00\x01\x02\x03\n\xff\xfe", "binary data"},
	} {
		var handed int
		_, err := dataset.Read(strings.NewReader(tc.data), dataset.Options{}, func(batch []dataset.Item) error {
			handed += len(batch)
			return nil
		})
		var errs *dataset.Errors
		if !errors.As(err, &errs) || len(errs.List) != 1 || errs.List[0].Line != 1 ||
			!strings.Contains(errs.List[0].Message, tc.want) || strings.Contains(err.Error(), "unknown column") || handed != 0 {
			t.Errorf("%s: %v (%d items handed on); want line 1 saying %q", name, err, handed, tc.want)
		}
	}
	// Text stays text: a CSV with a header is read as one.
	if _, err := dataset.Read(strings.NewReader("id,user,response\na,Hi,Hello\n"), dataset.Options{}, func([]dataset.Item) error { return nil }); err != nil {
		t.Fatalf("a CSV: %v", err)
	}
}
