package dataset_test

import (
	"fmt"
	"strings"

	"github.com/attune/attune/internal/dataset"
	"github.com/attune/attune/internal/rubric"
)

// A caller stores each batch as it comes, inside one transaction, and
// rolls the transaction back if Read returns an error.
func ExampleRead() {
	file := `{"id": "a-1", "messages": [{"role": "user", "content": "I can't sleep."}, {"role": "assistant", "content": "That sounds draining."}]}
{"id": "a-2", "turns": [{"role": "assistant", "text": "Hi!"}, {"role": "user", "text": "Hi."}, {"role": "user", "text": "Rough week."}, {"role": "assistant", "text": "Tell me."}], "meta": {"topic": "work"}}
`
	sum, err := dataset.Read(strings.NewReader(file), dataset.Options{Unit: rubric.LastReply}, func(batch []dataset.Item) error {
		for _, it := range batch {
			fmt.Println(it.SourceID, it.Kind, len(it.Messages), "messages,", it.Turns, "turns, meta", string(it.Meta))
		}
		return nil // tx.CopyFrom(...) in the store
	})
	fmt.Println(sum, err)

	_, err = dataset.Read(strings.NewReader("id,user,response\nr-1,Hi.,\nr-1,Hi.,Hello.\n"), dataset.Options{}, func([]dataset.Item) error { return nil })
	fmt.Println(err)
	// Output:
	// a-1 reply 2 messages, 1 turns, meta {}
	// a-2 conversation 4 messages, 1 turns, meta {"topic":"work"}
	// {jsonl 2 2} <nil>
	// line 2: response: empty
	// line 3: id: "r-1" already used on line 2
}
