package dataset_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/rubric"
)

var fuzzUnits = []rubric.Unit{"", rubric.Reply, rubric.Conversation, rubric.LastReply}

// FuzzRead holds Read to its contract on any input: it never panics, every
// error names a line that exists, no item is handed on after a problem,
// every item handed on passes every check, and the JSON scanner agrees
// with encoding/json on what is valid JSON and what it decodes to.
func FuzzRead(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*")
	for _, path := range files {
		if strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".csv") {
			f.Add(mustReadF(f, path), uint8(2), uint16(0))
		}
	}
	f.Add([]byte(`{"id":1,"messages":[{"role":"user","content":"\ud83d\ude22\ud800x"},{"role":"assistant","content":"a"}],"meta":{"b":{"d":[],"c":1e5},"a":-0.5}}`), uint8(3), uint16(0))
	f.Add([]byte("id,user,response\n1,\"a\nb\",c\n2,x,y\n"), uint8(1), uint16(8))
	f.Add([]byte(`{"id":"a","turns":[{"role":"assistant","text":"x"}],"meta":{"k":"\u0000"}}`), uint8(0), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, unit uint8, limit uint16) {
		opts := dataset.Options{
			Unit:      fuzzUnits[int(unit)%len(fuzzUnits)],
			BatchSize: 1 + int(unit)%3,
			MaxErrors: 1000,
		}
		if limit > 0 {
			opts.MaxLineBytes = int(limit % 512)
		}
		var items []dataset.Item
		sum, err := dataset.Read(bytes.NewReader(data), opts, func(b []dataset.Item) error {
			items = append(items, b...)
			return nil
		})
		var errs *dataset.Errors
		if err != nil && !errors.As(err, &errs) {
			t.Fatalf("error of type %T: %v", err, err)
		}
		firstErr := sum.Lines + 1
		if errs != nil {
			if len(errs.List) == 0 {
				t.Fatal("Errors with no errors")
			}
			for _, le := range errs.List {
				if le.Line < 1 || le.Line > max(sum.Lines, 1) {
					t.Errorf("error names line %d of %d: %v", le.Line, sum.Lines, le)
				}
				if strings.Contains(le.Message, "not by encoding/json") {
					t.Errorf("the scanner and encoding/json disagree: %v", le)
				}
				firstErr = min(firstErr, le.Line)
			}
		}
		seen := map[string]bool{}
		for _, it := range items {
			checkItem(t, it, opts.Unit)
			if it.Line >= firstErr {
				t.Errorf("item of line %d handed on after the error on line %d", it.Line, firstErr)
			}
			if seen[it.SourceID] {
				t.Errorf("id %q handed on twice", it.SourceID)
			}
			seen[it.SourceID] = true
		}
		if sum.Format == dataset.JSONL {
			agreeWithEncodingJSON(t, data, items, errs)
		}
	})
}

// checkItem checks one emitted item against every rule Read enforces.
func checkItem(t *testing.T, it dataset.Item, unit rubric.Unit) {
	t.Helper()
	id := it.SourceID
	if id == "" || strings.TrimSpace(id) != id || !utf8.ValidString(id) || strings.ContainsRune(id, 0) {
		t.Errorf("bad id %q", id)
	}
	if len(it.Messages) == 0 {
		t.Fatalf("%q: no messages", id)
	}
	assistant := false
	for _, m := range it.Messages {
		switch m.Role {
		case dataset.RoleAssistant:
			assistant = true
		case dataset.RoleUser, dataset.RoleSystem:
		default:
			t.Errorf("%q: role %q", id, m.Role)
		}
		if strings.TrimSpace(m.Content) == "" || !utf8.ValidString(m.Content) || strings.ContainsRune(m.Content, 0) {
			t.Errorf("%q: bad content %q", id, m.Content)
		}
	}
	if !assistant {
		t.Errorf("%q: no assistant message", id)
	}
	if (unit == rubric.LastReply || unit == rubric.Reply) && it.Messages[len(it.Messages)-1].Role != dataset.RoleAssistant {
		t.Errorf("%q: does not end with the assistant under unit %s", id, unit)
	}
	if it.Turns != dataset.CountTurns(it.Messages) {
		t.Errorf("%q: Turns %d", id, it.Turns)
	}
	reply := len(it.Messages) == 2 && it.Messages[0].Role == dataset.RoleUser && it.Messages[1].Role == dataset.RoleAssistant
	if (it.Kind == dataset.Reply) != reply || (it.Kind != dataset.Reply && it.Kind != dataset.Conversation) {
		t.Errorf("%q: kind %s", id, it.Kind)
	}
	// Valid, an object, and compact. (Not decoded: a number such as 1e700
	// is valid JSON that float64 cannot hold.)
	var compact bytes.Buffer
	if !json.Valid(it.Meta) || it.Meta[0] != '{' || json.Compact(&compact, it.Meta) != nil || !bytes.Equal(compact.Bytes(), it.Meta) {
		t.Errorf("%q: meta %s is not a compact object", id, it.Meta)
	}
	if h, err := dataset.Hash(it.Messages, it.Meta); err != nil || h != it.SHA256 {
		t.Errorf("%q: SHA256 %s, Hash gives %s, %v", id, it.SHA256, h, err)
	}
	if it.Line < 1 {
		t.Errorf("%q: line %d", id, it.Line)
	}
}

// agreeWithEncodingJSON holds the scanner to encoding/json: a line it
// called broken JSON is invalid to encoding/json, a line it read is valid,
// and an item's messages decode to the same text.
func agreeWithEncodingJSON(t *testing.T, data []byte, items []dataset.Item, errs *dataset.Errors) {
	t.Helper()
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	physical := bytes.Split(data, []byte("\n"))
	line := func(n int) []byte { return bytes.TrimSuffix(physical[n-1], []byte("\r")) }
	if errs != nil {
		for _, le := range errs.List {
			if le.Line > len(physical) {
				continue
			}
			l := line(le.Line)
			switch {
			case strings.HasPrefix(le.Message, "invalid JSON"):
				if json.Valid(l) {
					t.Errorf("line %d called broken but valid to encoding/json: %q", le.Line, l)
				}
			case strings.HasPrefix(le.Message, "invalid UTF-8"), strings.HasPrefix(le.Message, "the line is "),
				strings.HasPrefix(le.Message, "the file holds no items"):
			default:
				if !json.Valid(l) {
					t.Errorf("line %d read as JSON but invalid to encoding/json: %q (%v)", le.Line, l, le)
				}
			}
		}
	}
	type message struct {
		Role    string
		Content *string
		Text    *string
	}
	for _, it := range items {
		var v struct {
			Messages []message
			Turns    []message
		}
		if err := json.Unmarshal(line(it.Line), &v); err != nil {
			t.Errorf("line %d read but encoding/json says %v", it.Line, err)
			continue
		}
		ms := append(v.Messages, v.Turns...)
		if len(ms) != len(it.Messages) {
			t.Errorf("line %d: %d messages, encoding/json finds %d", it.Line, len(it.Messages), len(ms))
			continue
		}
		for i, m := range ms {
			text := m.Content
			if text == nil {
				text = m.Text
			}
			if text == nil || *text != it.Messages[i].Content {
				t.Errorf("line %d message %d: %q, encoding/json decodes %v", it.Line, i, it.Messages[i].Content, text)
			}
		}
	}
}

func mustReadF(f *testing.F, path string) []byte {
	b, err := readFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return b
}
