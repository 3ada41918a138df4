package dataset_test

import (
	"testing"

	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/rubric"
)

// TestExtraFieldsKeptInMeta: real files carry fields beside the dialogue;
// they import, kept under meta, and hash as if they had been put there.
func TestExtraFieldsKeptInMeta(t *testing.T) {
	t.Parallel()
	beside := `{"id": "a", "source": "forum", "score": [1, 2], "messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}], "meta": {"lang": "en"}}` + "\n"
	inside := `{"id": "a", "messages": [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello."}], "meta": {"score": [1,2], "lang": "en", "source": "forum"}}` + "\n"
	got, _, err := readAll(t, []byte(beside), dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := readAll(t, []byte(inside), dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if string(got[0].Meta) != `{"lang":"en","score":[1,2],"source":"forum"}` {
		t.Fatalf("meta = %s", got[0].Meta)
	}
	if got[0].SHA256 != want[0].SHA256 {
		t.Fatal("the same fields beside the dialogue and inside meta hash differently")
	}
}

// TestUserResponseShape: the JSONL twin of the CSV single-reply shape.
func TestUserResponseShape(t *testing.T) {
	t.Parallel()
	pair := `{"response": "That sounds hard.", "id": 7, "user": "I lost my job.", "source": "qa"}` + "\n"
	msgs := `{"id": 7, "source": "qa", "messages": [{"role": "user", "content": "I lost my job."}, {"role": "assistant", "content": "That sounds hard."}]}` + "\n"
	got, _, err := readAll(t, []byte(pair), dataset.Options{Unit: rubric.LastReply})
	if err != nil {
		t.Fatal(err)
	}
	want, _, _ := readAll(t, []byte(msgs), dataset.Options{})
	it := got[0]
	if it.SourceID != "7" || it.Kind != dataset.Reply || len(it.Messages) != 2 || it.Messages[0].Role != "user" || it.Messages[1].Content != "That sounds hard." || it.Turns != 1 {
		t.Fatalf("item = %+v", it)
	}
	if it.SHA256 != want[0].SHA256 {
		t.Fatal("a single reply hashes differently from the same dialogue as messages")
	}
}
