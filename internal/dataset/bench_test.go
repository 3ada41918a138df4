package dataset

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/attune/attune/internal/rubric"
)

// words make up the generated messages: mostly ASCII, with the curly
// quotes, accents and escapes real dialogue has.
var words = []string{
	"I", "feel", "so", "tired", "of", "everything", "lately,", "and", "my", "job",
	"is", "not", "going", "well.", "It", "sounds", "like", "you’re", "carrying", "a",
	"lot", "right", "now.", "That", "must", "be", "hard.", "What", "happened", "café",
	"\"really\"", "when", "you", "told", "them?", "I’m", "here", "to", "listen.", "sleep",
	"anxious", "family", "friend", "worried", "thank", "you.", "Maybe", "we", "could", "try",
}

// conversationsJSONL generates n JSONL lines shaped like typical imports:
// 6 to 10 messages of about 200 characters, opening with the user and
// alternating roles, and a small meta object. The same n gives the same
// bytes.
func conversationsJSONL(n int) []byte {
	rng := rand.New(rand.NewPCG(7, 7))
	var b bytes.Buffer
	text := func() string {
		var t []byte
		for len(t) < 200 {
			if len(t) > 0 {
				t = append(t, ' ')
			}
			t = append(t, words[rng.IntN(len(words))]...)
		}
		if rng.IntN(10) == 0 {
			t = append(t, "\nSecond paragraph."...)
		}
		return string(t)
	}
	for i := range n {
		fmt.Fprintf(&b, `{"id": "conv-%d", "messages": [`, i+1)
		msgs := 6 + rng.IntN(5)
		for j := range msgs {
			if j > 0 {
				b.WriteString(", ")
			}
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			fmt.Fprintf(&b, `{"role": %q, "content": %s}`, role, strconv.Quote(text()))
		}
		fmt.Fprintf(&b, `], "meta": {"source": "synthetic", "topic": "work", "split": "train", "rating": %d}}`+"\n", 1+rng.IntN(5))
	}
	return b.Bytes()
}

var benchFile = sync.OnceValue(func() []byte { return conversationsJSONL(100_000) })

// BenchmarkRead reads a 100,000-line JSONL file of typical conversations,
// the size the import must take at 20,000 items a second including the
// database; parsing alone should be far faster.
func BenchmarkRead(b *testing.B) {
	data := benchFile()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	items := 0
	for b.Loop() {
		sum, err := Read(bytes.NewReader(data), Options{Unit: rubric.Conversation}, func([]Item) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		items += sum.Items
	}
	b.ReportMetric(float64(items)/b.Elapsed().Seconds(), "items/s")
}
