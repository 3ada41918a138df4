package dataset_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/rubric"
)

// Messages for building test lines.
const (
	u  = `{"role": "user", "content": "I lost my job."}`
	a  = `{"role": "assistant", "content": "I'm sorry. That is a lot to take in."}`
	sy = `{"role": "system", "content": "Be kind."}`
)

// item returns a JSONL line with the id (JSON text) and messages.
func item(id string, msgs ...string) string {
	return `{"id": ` + id + `, "messages": [` + strings.Join(msgs, ", ") + `]}`
}

// lines joins lines into a file, each ended by a newline.
func lines(ls ...string) string { return strings.Join(ls, "\n") + "\n" }

// TestChecks holds one case per check, each with the exact text Read must
// return.
func TestChecks(t *testing.T) {
	conv := dataset.Options{Unit: rubric.Conversation}
	last := dataset.Options{Unit: rubric.LastReply}
	tests := []struct {
		name  string
		opts  dataset.Options
		input string
		want  string
	}{
		// Lines that are not JSON objects.
		{"invalid JSON", conv, lines(item(`"a"`, u, a), `{"id": "b", "messages": [`+u+`,]}`),
			`line 2: invalid JSON at byte 72: invalid character ']' looking for beginning of value`},
		{"truncated line", conv, lines(`{"id": "a", "messages": [` + u),
			`line 1: invalid JSON at byte 70: unexpected end of JSON input`},
		{"two objects on a line", conv, lines(item(`"a"`, u, a) + ` {}`),
			`line 1: invalid JSON at byte 148: invalid character '{' after top-level value`},
		{"array line", conv, lines(item(`"a"`, u, a), `["b", "c"]`),
			`line 2: the line is an array, not an object; each line must be one JSON object with id and messages`},
		{"string line", conv, lines(item(`"a"`, u, a), `"b"`),
			`line 2: the line is a string, not an object; each line must be one JSON object with id and messages`},
		{"invalid UTF-8", conv, lines(item(`"a"`, u, a), item("\"b\xffc\"", u, a)),
			`line 2: invalid UTF-8 at byte 10 (0xff); save the file as UTF-8`},
		{"invalid UTF-8 hidden from encoding/json by a later error", conv, lines(item(`"a"`, u, a), "{\"id\": \"\xc3\"}}"),
			`line 2: invalid UTF-8 at byte 9 (0xc3); save the file as UTF-8`},
		{"encoded surrogate is invalid UTF-8", conv, lines(item("\"\xed\xa0\x80\"", u, a)),
			`line 1: invalid UTF-8 at byte 9 (0xed); save the file as UTF-8`},
		{"line over the limit", dataset.Options{MaxLineBytes: 100}, lines(item(`"a"`, u, a), item(`"b"`, `{"role": "assistant", "content": "ok"}`)),
			`line 1: the line is 146 bytes, over the limit of 100 bytes`},
		{"line over the limit and the read buffer", dataset.Options{MaxLineBytes: 1 << 10},
			lines(item(`"a"`, `{"role": "user", "content": "`+strings.Repeat("x", 200_000)+`"}`, a), item(`"b"`, u, a), item(`"b"`, u, a)),
			"line 1: the line is 200132 bytes, over the limit of 1024 bytes (1 KiB)\n" +
				`line 3: id: "b" already used on line 2`},

		// id.
		{"id missing", conv, lines(`{"messages": [` + u + `, ` + a + `]}`),
			`line 1: id: missing; every item needs an id`},
		{"id empty", conv, lines(item(`""`, u, a)),
			`line 1: id: empty; every item needs an id`},
		{"id leading space", conv, lines(item(`" a"`, u, a)),
			`line 1: id: " a" starts with whitespace; remove it`},
		{"id trailing newline", conv, lines(item(`"a\n"`, u, a)),
			`line 1: id: "a\n" ends with whitespace; remove it`},
		{"id fraction", conv, lines(item(`1.5`, u, a)),
			`line 1: id: must be a string or an integer, not the number 1.5`},
		{"id exponent", conv, lines(item(`1e3`, u, a)),
			`line 1: id: must be a string or an integer, not the number 1e3`},
		{"id boolean", conv, lines(item(`true`, u, a)),
			`line 1: id: must be a string or an integer, not a boolean`},
		{"id object", conv, lines(item(`{"n": 1}`, u, a)),
			`line 1: id: must be a string or an integer, not an object`},
		{"id NUL", conv, lines(item(`"a\u0000"`, u, a)),
			`line 1: id: contains a NUL character (\u0000), which cannot be stored`},
		{"id twice", conv, lines(`{"id": "a", "id": "b", "messages": [` + u + `, ` + a + `]}`),
			`line 1: id: given twice`},
		{"id repeated", conv, lines(item(`"a"`, u, a), item(`"b"`, u, a), "", item(`"a"`, u, a)),
			`line 4: id: "a" already used on line 1`},
		{"integer id repeats string id", conv, lines(item(`"7"`, u, a), item(`7`, u, a)),
			`line 2: id: "7" already used on line 1`},
		{"id repeated after a broken line", conv, lines(item(`"a"`, u), item(`"a"`, u, a)),
			"line 1: messages: no assistant message; an item needs an assistant reply to rate\n" +
				`line 2: id: "a" already used on line 1`},

		// Top-level fields.
		{"extra field also inside meta", conv, lines(`{"id": "a", "source": "forum", "meta": {"source": "x"}, "messages": [` + u + `, ` + a + `]}`),
			`line 1: meta: "source" is given both beside the dialogue and inside meta; keep one`},
		{"keys are case-sensitive", conv, lines(`{"ID": "a", "messages": [` + u + `, ` + a + `]}`),
			`line 1: id: missing; every item needs an id`},
		{"a misspelt dialogue is missing, not kept as meta", conv, lines(`{"id": "a", "mesages": [` + u + `, ` + a + `]}`),
			`line 1: messages: missing; give the dialogue as messages (role, content), as turns (role, text), or as user and response`},
		{"user and response with messages", conv, lines(`{"id": "a", "user": "Hi.", "messages": [` + u + `, ` + a + `]}`),
			`line 1: user: given together with messages; give the dialogue one way`},
		{"user without response", conv, lines(`{"id": "a", "user": "Hi."}`),
			`line 1: response: missing; a single reply needs both user and response`},
		{"empty response", conv, lines(`{"id": "a", "user": "Hi.", "response": " "}`),
			`line 1: response: only whitespace`},
		{"messages and turns", conv, lines(`{"id": "a", "turns": [{"role": "assistant", "text": "Hi."}], "messages": [` + u + `, ` + a + `]}`),
			`line 1: messages: given together with turns; use one of them`},
		{"neither messages nor turns", conv, lines(`{"id": "a"}`),
			`line 1: messages: missing; give the dialogue as messages (role, content), as turns (role, text), or as user and response`},
		{"messages twice", conv, lines(`{"id": "a", "messages": [` + a + `], "messages": [` + a + `]}`),
			`line 1: messages: given twice`},
		{"messages not an array", conv, lines(`{"id": "a", "messages": "hello"}`),
			`line 1: messages: must be an array of {"role", "content"} objects, not a string`},
		{"turns not an array", conv, lines(`{"id": "a", "turns": null}`),
			`line 1: turns: must be an array of {"role", "text"} objects, not null`},
		{"empty messages", conv, lines(`{"id": "a", "messages": [ ]}`),
			`line 1: messages: empty; an item needs at least one message`},
		{"meta not an object", conv, lines(`{"id": "a", "messages": [` + a + `], "meta": [1]}`),
			`line 1: meta: must be an object, not an array`},
		{"meta null", conv, lines(`{"id": "a", "messages": [` + a + `], "meta": null}`),
			`line 1: meta: must be an object, not null`},
		{"meta key twice", conv, lines(`{"id": "a", "messages": [` + a + `], "meta": {"x": {"k": 1, "j": 2, "k": 3}}}`),
			`line 1: meta: key "k" appears twice in one object`},
		{"meta key twice, spelt differently", conv, lines(`{"id": "a", "messages": [` + a + `], "meta": {"k": 1, "\u006b": 2}}`),
			`line 1: meta: key "k" appears twice in one object`},
		{"meta NUL", conv, lines(`{"id": "a", "messages": [` + a + `], "meta": {"note": "a\u0000b"}}`),
			`line 1: meta: contains a NUL character (\u0000), which cannot be stored`},
		{"meta key NUL", conv, lines(`{"id": "a", "messages": [` + a + `], "meta": {"no\u0000te": "ab"}}`),
			`line 1: meta: contains a NUL character (\u0000), which cannot be stored`},
		{"extra field's name NUL", conv, lines(`{"id": "a", "messages": [` + a + `], "so\u0000urce": "x"}`),
			`line 1: "so\x00urce": contains a NUL character (\u0000), which cannot be stored`},
		{"meta nested too deep", conv, lines(`{"id": "a", "messages": [` + a + `], "meta": ` + strings.Repeat(`{"k":`, 101) + `1` + strings.Repeat(`}`, 101) + `}`),
			`line 1: meta: nested more than 100 levels deep`},
		{"meta nested as deep as allowed", conv, lines(`{"id": "a", "messages": [` + u + `], "meta": {"k":` + strings.Repeat(`[`, 99) + strings.Repeat(`]`, 99) + `}}`),
			`line 1: messages: no assistant message; an item needs an assistant reply to rate`},
		{"nested beyond encoding/json's limit", conv, lines(`{"id": "a", "extra": ` + strings.Repeat(`[`, 10000) + strings.Repeat(`]`, 10000) + `}`),
			`line 1: invalid JSON at byte 10021: invalid character '[' exceeded max depth`},
		// A field beside the dialogue is kept under meta, so it is held
		// to meta's nesting limit: at level 2 of the line it counts as a
		// field of meta, deep as the same field inside meta.
		{"extra field nested too deep", conv, lines(`{"id": "a", "messages": [` + a + `], "x0": ` + strings.Repeat(`[`, 9990) + strings.Repeat(`]`, 9990) + `}`),
			`line 1: x0: nested more than 100 levels deep`},
		{"extra field nested one level too deep", conv, lines(`{"id": "a", "messages": [` + a + `], "x0": ` + strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100) + `}`),
			`line 1: x0: nested more than 100 levels deep`},
		{"extra field nested as deep as allowed", conv, lines(`{"id": "a", "messages": [` + u + `], "x0": ` + strings.Repeat(`[`, 99) + strings.Repeat(`]`, 99) + `}`),
			`line 1: messages: no assistant message; an item needs an assistant reply to rate`},
		{"meta too large", conv, lines(`{"id": "a", "messages": [` + a + `], "meta": {"note": "` + strings.Repeat("x", 64<<10) + `"}}`),
			`line 1: meta: meta is 65547 bytes, over the limit of 65536 bytes (64 KiB); keep long text in the messages or out of the file`},
		{"extra fields too large for meta", conv, lines(`{"id": "a", "messages": [` + a + `], "meta": {"n": "` + strings.Repeat("x", 40<<10) + `"}, "m": "` + strings.Repeat("x", 40<<10) + `"}`),
			`line 1: meta: meta with the fields beside the dialogue is 81935 bytes, over the limit of 65536 bytes (64 KiB); keep long text in the messages or out of the file`},
		{"meta twice", conv, lines(`{"id": "a", "messages": [` + a + `], "meta": {}, "meta": {}}`),
			`line 1: meta: given twice`},

		// Messages.
		{"message not an object", conv, lines(item(`"a"`, u, `"hi"`, a)),
			`line 1: messages[1]: must be an object with role and content, not a string`},
		{"turn not an object", conv, lines(`{"id": "a", "turns": [[]]}`),
			`line 1: turns[0]: must be an object with role and text, not an array`},
		{"unknown message field", conv, lines(item(`"a"`, u, `{"role": "assistant", "content": "Hi.", "weight": 1}`)),
			`line 1: messages[1].weight: unknown field; a message has only role and content`},
		{"unknown turn field", conv, lines(`{"id": "a", "turns": [{"role": "assistant", "text": "Hi.", "strategy": "Question"}]}`),
			`line 1: turns[0].strategy: unknown field; a turn has only role and text`},
		{"text in messages", conv, lines(item(`"a"`, `{"role": "assistant", "text": "Hi."}`)),
			`line 1: messages[0].text: unknown field; a message's text is in "content"`},
		{"content in turns", conv, lines(`{"id": "a", "turns": [{"role": "assistant", "content": "Hi."}]}`),
			`line 1: turns[0].content: unknown field; a turn's text is in "text"`},
		{"role missing", conv, lines(item(`"a"`, u, `{"content": "Hi."}`)),
			`line 1: messages[1].role: missing; use user, assistant or system`},
		{"role not a string", conv, lines(item(`"a"`, u, `{"role": 2, "content": "Hi."}`)),
			`line 1: messages[1].role: must be a string, not a number; use user, assistant or system`},
		{"unknown role", conv, lines(item(`"a"`, u, `{"role": "bot", "content": "Hi."}`)),
			`line 1: messages[1].role: unknown role "bot": use user, assistant or system`},
		{"role in capitals", conv, lines(item(`"a"`, u, `{"role": "Assistant", "content": "Hi."}`)),
			`line 1: messages[1].role: unknown role "Assistant": use user, assistant or system (in lower case)`},
		{"role twice", conv, lines(item(`"a"`, `{"role": "user", "role": "user", "content": "Hi."}`, a)),
			`line 1: messages[0].role: given twice`},
		{"content missing", conv, lines(item(`"a"`, u, `{"role": "assistant"}`)),
			`line 1: messages[1].content: missing`},
		{"text missing", conv, lines(`{"id": "a", "turns": [{"role": "assistant"}]}`),
			`line 1: turns[0].text: missing`},
		{"content not a string", conv, lines(item(`"a"`, u, `{"role": "assistant", "content": ["Hi."]}`)),
			`line 1: messages[1].content: must be a string, not an array`},
		{"content empty", conv, lines(item(`"a"`, u, `{"role": "assistant", "content": ""}`)),
			`line 1: messages[1].content: empty`},
		{"content whitespace", conv, lines(item(`"a"`, u, `{"role": "assistant", "content": " \t\n\r "}`)),
			`line 1: messages[1].content: only whitespace`},
		{"content no-break spaces", conv, lines(item(`"a"`, u, `{"role": "assistant", "content": "\u00a0 \u3000"}`)),
			`line 1: messages[1].content: only whitespace`},
		{"content NUL", conv, lines(item(`"a"`, u, `{"role": "assistant", "content": "Hi\u0000"}`)),
			`line 1: messages[1].content: contains a NUL character (\u0000), which cannot be stored`},
		{"content twice", conv, lines(item(`"a"`, u, `{"role": "assistant", "content": "Hi.", "content": "Hi."}`)),
			`line 1: messages[1].content: given twice`},
		{"several problems on one line", conv, lines(`{"id": "", "extra": 1, "messages": [{"role": "bot", "content": ""}, {}]}`),
			"line 1: id: empty; every item needs an id\n" +
				"line 1: messages[0].role: unknown role \"bot\": use user, assistant or system\n" +
				"line 1: messages[0].content: empty\n" +
				"line 1: messages[1].role: missing; use user, assistant or system\n" +
				"line 1: messages[1].content: missing"},
		{"problems before broken JSON are dropped", conv, lines(`{"id": "", "extra": 1, "messages": [` + a + `]`),
			`line 1: invalid JSON at byte 109: unexpected end of JSON input`},

		// The dialogue as a whole.
		{"no assistant", conv, lines(item(`"a"`, sy, u, u)),
			`line 1: messages: no assistant message; an item needs an assistant reply to rate`},
		{"no assistant in turns", conv, lines(`{"id": "a", "turns": [{"role": "user", "text": "Hi."}]}`),
			`line 1: turns: no assistant message; an item needs an assistant reply to rate`},
		{"last reply ends with user", last, lines(item(`"a"`, u, a, u)),
			`line 1: messages: the rubric rates the last reply, but this conversation ends with a user message`},
		{"reply ends with system", dataset.Options{Unit: rubric.Reply}, lines(item(`"a"`, u, a, sy)),
			`line 1: messages: the rubric rates the last reply, but this conversation ends with a system message`},

		// Whole files.
		{"empty file", conv, "", `line 1: the file holds no items`},
		{"blank file", conv, "\n \n\t\r\n", `line 3: the file holds no items`},
		{"JSONL of only broken lines lists them, not emptiness", conv, lines(`{}`),
			"line 1: id: missing; every item needs an id\n" +
				"line 1: messages: missing; give the dialogue as messages (role, content), as turns (role, text), or as user and response"},

		// CSV.
		{"CSV unknown column", dataset.Options{}, "id,user,response,score\nr-1,Hi.,Hello.,5\n",
			`line 1: header: unknown column "score"; the header must be id,user,response (in any order)`},
		{"CSV missing column", dataset.Options{}, "id,response\nr-1,Hello.\n",
			`line 1: header: missing column "user"; the header must be id,user,response (in any order)`},
		{"CSV column twice", dataset.Options{}, "id,user,User,response\nr-1,Hi.,Hi.,Hello.\n",
			`line 1: header: column "User" more than once`},
		{"CSV forced on JSONL", dataset.Options{Format: dataset.CSV}, lines(item(`"a"`, u, a)),
			`line 1: invalid CSV at column 2: bare " in non-quoted-field`},
		{"CSV empty id", dataset.Options{}, "id,user,response\n,Hi.,Hello.\n",
			`line 2: id: empty; every item needs an id`},
		{"CSV id with spaces", dataset.Options{}, "id,user,response\nr-1 ,Hi.,Hello.\n",
			`line 2: id: "r-1 " ends with whitespace; remove it`},
		{"CSV empty user", dataset.Options{}, "id,user,response\nr-1,,Hello.\n",
			`line 2: user: empty`},
		{"CSV whitespace response", dataset.Options{}, "id,user,response\nr-1,Hi.,\"\n \"\n",
			`line 2: response: only whitespace`},
		{"CSV NUL", dataset.Options{}, "id,user,response\nr-1,Hi.,He\x00llo.\n",
			`line 2: response: contains a NUL character (\u0000), which cannot be stored`},
		{"CSV invalid UTF-8", dataset.Options{}, "id,user,response\nr-1,Caf\xe9,Hello.\n",
			`line 2: user: invalid UTF-8 at byte 4 of the field (0xe9); save the file as UTF-8`},
		{"CSV repeated id after a quoted newline", dataset.Options{}, "id,user,response\nr-1,\"Hi,\nthere.\",Hello.\nr-1,Hi.,Hello.\n",
			`line 4: id: "r-1" already used on line 2`},
		{"CSV too many fields", dataset.Options{}, "id,user,response\nr-1,Hi.,Hello.,extra\n",
			`line 2: the record has 4 fields, but the header has 3`},
		{"CSV bare quote", dataset.Options{}, "id,user,response\nr-1,Hi \"there\",Hello.\n",
			`line 2: invalid CSV at column 8: bare " in non-quoted-field`},
		{"CSV unterminated quote", dataset.Options{}, "id,user,response\nr-1,\"Hi.,Hello.\nr-2,Hi.,Hello.\n",
			`line 2: invalid CSV at line 3, column 16: extraneous or missing " in quoted-field`},
		{"CSV record over the limit", dataset.Options{MaxLineBytes: 40}, "id,user,response\nr-1,Hi.,Hello.\nr-2,\"Hi.\n" + strings.Repeat("x", 50) + "\",Hello.\nr-3,Hi.,Hello.\n",
			`line 3: the record starting on this line is over the limit of 40 bytes; if it should be shorter, look for a missing or extra " here; reading stopped`},
		{"CSV header only", dataset.Options{}, "id,user,response\n\n",
			`line 2: the file has a header but no records`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, _, err := readAll(t, []byte(tt.input), tt.opts)
			var errs *dataset.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("got error %v, want *dataset.Errors", err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
			for _, le := range errs.List {
				if le.Line < 1 {
					t.Errorf("error names line %d", le.Line)
				}
			}
			if len(items) > 0 {
				t.Errorf("emit got %d items from a file with errors", len(items))
			}
		})
	}
}

// TestErrorFormat pins the one-line form of LineError.
func TestErrorFormat(t *testing.T) {
	e := dataset.LineError{Line: 7, Field: "messages[2].role", Message: `unknown role "bot": use user, assistant or system`}
	if got, want := e.Error(), `line 7: messages[2].role: unknown role "bot": use user, assistant or system`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e = dataset.LineError{Line: 3, Message: "the file holds no items"}
	if got, want := e.Error(), "line 3: the file holds no items"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestMaxErrors checks that Read lists MaxErrors problems, counts the
// rest, and says how many it left out.
func TestMaxErrors(t *testing.T) {
	var ls []string
	for i := range 70 {
		ls = append(ls, item(fmt.Sprintf(`"x-%d"`, i), u)) // no assistant
	}
	for _, tt := range []struct {
		max, listed, cut int
	}{
		{0, 50, 20}, // the default
		{10, 10, 60},
		{100, 70, 0},
	} {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			_, sum, err := readAll(t, []byte(lines(ls...)), dataset.Options{MaxErrors: tt.max})
			var errs *dataset.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want *dataset.Errors", err)
			}
			if len(errs.List) != tt.listed || errs.Cut != tt.cut {
				t.Errorf("listed %d, cut %d; want %d, %d", len(errs.List), errs.Cut, tt.listed, tt.cut)
			}
			if sum.Lines != 70 {
				t.Errorf("read %d lines, want all 70", sum.Lines)
			}
			msg := err.Error()
			if got := strings.Count(msg, "\n") + 1; got != tt.listed+min(tt.cut, 1) {
				t.Errorf("Error() has %d lines", got)
			}
			if tt.cut > 0 {
				want := fmt.Sprintf("\n… and %d more errors (only the first %d are listed)", tt.cut, tt.listed)
				if !strings.HasSuffix(msg, want) {
					t.Errorf("Error() ends %q, want %q", msg[strings.LastIndexByte(msg, '\n'):], want)
				}
			}
		})
	}
}
