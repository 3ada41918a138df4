package review

import (
	"testing"

	"github.com/attune/attune/internal/store"
)

// TestEmptyQueueSaysWhy: an empty queue of disagreements says where the
// items are instead, from the gold counts.
func TestEmptyQueueSaysWhy(t *testing.T) {
	for _, c := range []struct {
		counts store.GoldCounts
		want   string
	}{
		{store.GoldCounts{}, "The project has no items yet."},
		{store.GoldCounts{Items: 5, Labelling: 5}, "5 items are still being labelled."},
		{store.GoldCounts{Items: 9, Labelling: 1, Automatic: 7, Adjudicated: 1}, "1 item is still being labelled; 7 settled by consensus; 1 settled by a lead."},
		{store.GoldCounts{Items: 4, Automatic: 2, Pending: 2},
			"2 settled by consensus. 2 items have complete labels the rule has not judged as they are now (judged under another setting or overlap, or answered by a judge since): apply the consensus rule."},
		{store.GoldCounts{Items: 1, Pending: 1},
			"1 item has complete labels the rule has not judged as they are now (judged under another setting or overlap, or answered by a judge since): apply the consensus rule."},
	} {
		if got := emptyQueueWhy(c.counts); got != c.want {
			t.Errorf("%+v:\n got %q\nwant %q", c.counts, got, c.want)
		}
	}
}
