package dataset_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dataset"
)

// hashOf reads one JSONL line or CSV file and returns its item's hash.
func hashOf(t *testing.T, input string) string {
	t.Helper()
	items, _, err := readAll(t, []byte(input), dataset.Options{})
	if err != nil {
		t.Fatalf("%s: %v", input, err)
	}
	if len(items) != 1 {
		t.Fatalf("%s: %d items", input, len(items))
	}
	return items[0].SHA256
}

// TestHashStable checks that the same content written differently hashes
// the same: spacing, key order, escapes, an integer id, turns instead of
// messages, CSV instead of JSONL.
func TestHashStable(t *testing.T) {
	base := hashOf(t, `{"id": "a", "messages": [{"role": "user", "content": "Hi, café."}, {"role": "assistant", "content": "Hello \"you\"."}], "meta": {"b": [1, {"y": 2, "x": 1}], "a": "é"}}`)
	for _, in := range []string{
		`{"id":"a","messages":[{"role":"user","content":"Hi, café."},{"role":"assistant","content":"Hello \"you\"."}],"meta":{"b":[1,{"y":2,"x":1}],"a":"é"}}`,
		`  { "meta" : { "a" : "\u00e9" , "b" : [ 1 , { "x" : 1 , "y" : 2 } ] } , "messages" : [ { "content" : "Hi, caf\u00e9." , "role" : "user" } , { "role" : "assistant" , "content" : "Hello \u0022you\u0022." } ] , "id" : "a" }  `,
		`{"id": "b", "turns": [{"role": "user", "text": "Hi, café."}, {"role": "assistant", "text": "Hello \"you\"."}], "meta": {"a": "é", "b": [1, {"x": 1, "y": 2}]}}`,
		`{"id": 7, "messages": [{"role": "user", "content": "Hi, caf\u00E9."}, {"role": "assistant", "content": "Hello \"you\"\u002e"}], "meta": {"a": "\u00e9", "b": [1, {"x": 1, "y": 2}]}}` + "\r\n",
	} {
		if got := hashOf(t, in); got != base {
			t.Errorf("hash changed for %s", in)
		}
	}

	// No meta and an empty meta are the same; CSV has no meta.
	plain := hashOf(t, `{"id": "a", "messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello, \"you\".\nBye."}]}`)
	for _, in := range []string{
		`{"id": "a", "messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello, \"you\".\nBye."}], "meta": { }}`,
		"id,user,response\na,Hi.,\"Hello, \"\"you\"\".\nBye.\"\n",
		"response,user,id\r\n\"Hello, \"\"you\"\".\r\nBye.\",Hi.,a\r\n",
	} {
		if got := hashOf(t, in); got != plain {
			t.Errorf("hash changed for %q", in)
		}
	}

	// Hash agrees with Read whatever the layout of the meta given.
	ms := msgs("user", "Hi, café.", "assistant", `Hello "you".`)
	for _, meta := range []string{`{"a":"é","b":[1,{"x":1,"y":2}]}`, ` { "b" : [1, {"y": 2, "x": 1}], "a": "\u00e9" } `} {
		if got, err := dataset.Hash(ms, json.RawMessage(meta)); err != nil || got != base {
			t.Errorf("Hash(%s) = %s, %v; want %s", meta, got, err, base)
		}
	}
	for _, meta := range []string{"", "{}"} {
		if got, err := dataset.Hash(msgs("user", "Hi.", "assistant", "Hello, \"you\".\nBye."), json.RawMessage(meta)); err != nil || got != plain {
			t.Errorf("Hash with meta %q = %s, %v; want %s", meta, got, err, plain)
		}
	}
}

// TestHashSensitive checks that every change of content changes the hash.
func TestHashSensitive(t *testing.T) {
	base := msgs("user", "I lost my job.", "assistant", "I'm sorry.")
	baseMeta := `{"topic":"work","n":[1,2]}`
	seen := map[string]string{}
	check := func(name string, m []dataset.Message, meta string) {
		t.Helper()
		h, err := dataset.Hash(m, json.RawMessage(meta))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if other, dup := seen[h]; dup {
			t.Errorf("%s hashes the same as %s", name, other)
		}
		seen[h] = name
	}
	check("base", base, baseMeta)
	check("a letter changed", msgs("user", "I lost my jab.", "assistant", "I'm sorry."), baseMeta)
	check("case changed", msgs("user", "i lost my job.", "assistant", "I'm sorry."), baseMeta)
	check("trailing space", msgs("user", "I lost my job. ", "assistant", "I'm sorry."), baseMeta)
	check("trailing newline", msgs("user", "I lost my job.\n", "assistant", "I'm sorry."), baseMeta)
	check("no-break space", msgs("user", "I lost my\u00a0job.", "assistant", "I'm sorry."), baseMeta)
	check("roles swapped", msgs("assistant", "I lost my job.", "user", "I'm sorry."), baseMeta)
	check("role changed", msgs("system", "I lost my job.", "assistant", "I'm sorry."), baseMeta)
	check("order changed", msgs("assistant", "I'm sorry.", "user", "I lost my job."), baseMeta)
	check("text moved between messages", msgs("user", "I lost my job.I'm", "assistant", " sorry."), baseMeta)
	check("message split", msgs("user", "I lost", "user", " my job.", "assistant", "I'm sorry."), baseMeta)
	check("message added", msgs("user", "I lost my job.", "assistant", "I'm sorry.", "user", "Thanks."), baseMeta)
	check("message dropped", msgs("user", "I lost my job."), baseMeta)
	check("meta value changed", base, `{"topic":"home","n":[1,2]}`)
	check("meta number changed", base, `{"topic":"work","n":[1,3]}`)
	check("meta array order changed", base, `{"topic":"work","n":[2,1]}`)
	check("meta key renamed", base, `{"topic2":"work","n":[1,2]}`)
	check("meta key added", base, `{"topic":"work","n":[1,2],"x":null}`)
	check("meta type changed", base, `{"topic":"work","n":"[1,2]"}`)
	check("meta empty", base, `{}`)
	check("content looks like meta", msgs("user", `I lost my job.","meta":{}`, "assistant", "I'm sorry."), baseMeta)
}

// TestHashRefusesBadMeta checks Hash's own errors.
func TestHashRefusesBadMeta(t *testing.T) {
	for _, meta := range []string{`[1]`, `{"a":`, `{"a":1,"a":2}`, `{} x`} {
		if _, err := dataset.Hash(nil, json.RawMessage(meta)); err == nil {
			t.Errorf("Hash accepted meta %s", meta)
		} else if !strings.HasPrefix(err.Error(), "dataset: hash: meta") {
			t.Errorf("Hash(%s): %v", meta, err)
		}
	}
}
