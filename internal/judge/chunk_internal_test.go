package judge

import (
	"slices"
	"testing"
)

func TestChunksCutTheRunsItemsAloneIntoStretches(t *testing.T) {
	ids := func(from, n int64) []int64 {
		var out []int64
		for i := range n {
			out = append(out, from+3*i) // ids with gaps, as another project's items leave them
		}
		return out
	}
	scope := ids(10, 200) // 200 items: stretches of 4
	tests := []struct {
		name  string
		scope []int64
		todo  []int64
		want  [][2]int64
	}{
		{"nothing to do", scope, nil, nil},
		{"a small run: one item a job", ids(10, 3), ids(10, 3), [][2]int64{{10, 10}, {13, 13}, {16, 16}}},
		{"one item left: its own stretch as the whole run cuts it", scope, []int64{10 + 3*5}, [][2]int64{{10 + 3*4, 10 + 3*7}}},
		{"two items of one stretch: one job", scope, []int64{10, 13}, [][2]int64{{10, 19}}},
		{"a large run: at most maxChunk items a job", ids(1, 5000), []int64{1}, [][2]int64{{1, 1 + 3*(maxChunk-1)}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := chunks(tc.scope, tc.todo)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("chunks = %v, want %v", got, tc.want)
			}
		})
	}
	// Every item to do lies in exactly one stretch queued, and whatever is
	// left, a stretch is always one the whole run has: queueing the rest
	// again after a crash queues the jobs already queued.
	all := chunks(scope, scope)
	for _, todo := range [][]int64{scope, scope[50:], scope[7:9], {scope[199]}} {
		got := chunks(scope, todo)
		for _, c := range got {
			if !slices.Contains(all, c) {
				t.Fatalf("stretch %v is not one of the whole run's", c)
			}
		}
		for _, id := range todo {
			n := 0
			for _, c := range got {
				if id >= c[0] && id <= c[1] {
					n++
				}
			}
			if n != 1 {
				t.Fatalf("item %d lies in %d stretches", id, n)
			}
		}
	}
}
