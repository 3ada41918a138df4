package dataset_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/rubric"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with the file at path, or rewrites it under -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; run go test -update and review the diff\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}

// readAll reads input with opts and returns every item emitted.
func readAll(t *testing.T, input []byte, opts dataset.Options) ([]dataset.Item, dataset.Summary, error) {
	t.Helper()
	var items []dataset.Item
	sum, err := dataset.Read(bytes.NewReader(input), opts, func(batch []dataset.Item) error {
		if len(batch) == 0 {
			t.Error("emit called with an empty batch")
		}
		items = append(items, batch...)
		return nil
	})
	return items, sum, err
}

// brokenOptions are the options a file of the broken corpus is read with,
// where the default (the conversation unit) would not show its problem.
var brokenOptions = map[string]dataset.Options{
	"ends-with-user.jsonl": {Unit: rubric.LastReply},
	"long-line.jsonl":      {Unit: rubric.Conversation, MaxLineBytes: 200},
}

// TestBrokenCorpus reads every file in testdata/broken, one problem each,
// and compares the errors with NAME.errors beside it. Every file must be
// refused as a whole.
func TestBrokenCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/broken/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range files {
		if strings.HasSuffix(path, ".errors") {
			continue
		}
		n++
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			opts, ok := brokenOptions[name]
			if !ok {
				opts = dataset.Options{Unit: rubric.Conversation}
			}
			var errs *dataset.Errors
			items, _, err := readAll(t, data, opts)
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want *dataset.Errors", err)
			}
			// Each file is smaller than a batch, so none of it may reach
			// emit, not even its good lines.
			if len(items) > 0 {
				t.Errorf("emit got %d items", len(items))
			}
			golden(t, path+".errors", []byte(err.Error()+"\n"))
		})
	}
	if n < 15 {
		t.Errorf("only %d broken files found", n)
	}
}

// TestGoodFiles reads the good file of each shape and compares the items
// with NAME.items.json.
func TestGoodFiles(t *testing.T) {
	for _, name := range []string{"messages.jsonl", "turns.jsonl", "replies.csv"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "good", name)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			items, sum, err := readAll(t, data, dataset.Options{BatchSize: 2})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Items != len(items) {
				t.Errorf("Summary.Items = %d, emitted %d", sum.Items, len(items))
			}
			for _, it := range items {
				if want, _ := dataset.Hash(it.Messages, it.Meta); it.SHA256 != want {
					t.Errorf("%s: SHA256 %s, Hash gives %s", it.SourceID, it.SHA256, want)
				}
			}
			got, err := json.MarshalIndent(struct {
				Summary dataset.Summary
				Items   []dataset.Item
			}{sum, items}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, path+".items.json", append(got, '\n'))
		})
	}
}

var readFile = os.ReadFile

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
