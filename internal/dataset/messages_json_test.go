package dataset_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/attune/attune/internal/dataset"
)

// TestAppendMessagesJSON checks that the stored form of a dialogue decodes
// back to exactly the messages read, whatever characters the texts hold.
func TestAppendMessagesJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		msgs []dataset.Message
	}{
		{"plain", []dataset.Message{{Role: "user", Content: "I feel low."}, {Role: "assistant", Content: "That sounds hard."}}},
		{"quotes and backslashes", []dataset.Message{{Role: "user", Content: `he said "no" \ then left`}}},
		{"control characters", []dataset.Message{{Role: "system", Content: "line\none\r\n\ttab \x01\x1f\x7f"}}},
		{"beyond ASCII", []dataset.Message{{Role: "user", Content: "café ☕ 😢 \u2028 \u2029 <b>&amp;</b>"}}},
		{"one message", []dataset.Message{{Role: "assistant", Content: "x"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("keep:")
			out := dataset.AppendMessagesJSON(slices.Clone(prefix), tc.msgs)
			if string(out[:len(prefix)]) != string(prefix) {
				t.Fatalf("prefix overwritten: %q", out)
			}
			var got []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			}
			if err := json.Unmarshal(out[len(prefix):], &got); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if len(got) != len(tc.msgs) {
				t.Fatalf("%d messages back, want %d", len(got), len(tc.msgs))
			}
			for i, m := range tc.msgs {
				if got[i].Role != m.Role || got[i].Content != m.Content {
					t.Errorf("message %d = %+v, want %+v", i, got[i], m)
				}
			}
		})
	}
}

// TestAppendMessagesJSONLayout holds the stored form to the layout
// PostgreSQL's jsonb prints: items keep that text, and the dataset export
// copies it without decoding only when it is exactly that.
func TestAppendMessagesJSONLayout(t *testing.T) {
	msgs := []dataset.Message{
		{Role: "user", Content: "a\"b\\c\nd\re\tf\bg\fh\x01i\x1fj\x7fk é ☕"},
		{Role: "assistant", Content: ""},
	}
	want := `[{"role": "user", "content": "a\"b\\c\nd\re\tf\bg\fh\u0001i\u001fj` + "\x7f" + `k é ☕"}, {"role": "assistant", "content": ""}]`
	if got := string(dataset.AppendMessagesJSON(nil, msgs)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
