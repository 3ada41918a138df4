package evaluation

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/attune/attune/internal/attune"
	"github.com/attune/attune/internal/ppi"
	"github.com/attune/attune/internal/store"
)

// DrawQuery is a draw asked for: K uniformly random judge-only items of
// the project (of System under SystemKey, or of every system when System
// is "") sent to people's queues, from Seed (0: a fresh seed, recorded).
// Judge-only is what PPI means by it: no person labelled the item yet.
type DrawQuery struct {
	ProjectID int64
	ActorID   *int64 // nil for the operator at the machine
	K         int
	System    string
	SystemKey string
	Seed      uint64
}

// Field names of a DrawQuery's problems, as the API spells them.
const (
	FieldK    = "k"
	FieldSeed = "seed"
)

// DrawStore is what a draw needs of the database; *store.DB satisfies
// it.
type DrawStore interface {
	DrawItems(ctx context.Context, req store.DrawRequest, pick store.DrawPick) (store.Draw, error)
}

// DrawLister reads a project's draws; *store.DB satisfies it.
type DrawLister interface {
	ListDraws(ctx context.Context, projectID int64) ([]store.Draw, error)
}

// CheckDraw says what is wrong with q before anything is read, as an
// attune.ValidationError naming the field, or nil.
func CheckDraw(q DrawQuery) error {
	if q.K <= 0 {
		return attune.Invalid(FieldK, fmt.Sprintf("k is %d: ask for at least one item to send to people", q.K))
	}
	return nil
}

// Draw performs q: it checks it, and in one transaction of st draws K
// items uniformly (ppi.Draw, over the pool in item order, so the stored
// seed reproduces the draw) and sends them to people's queues. The
// project's first draw holds every other untouched item back from
// people's queues (store.DrawItems). A k beyond the pool is refused
// naming how many items there are; nothing is stored then.
func Draw(ctx context.Context, st DrawStore, q DrawQuery) (store.Draw, error) {
	if err := CheckDraw(q); err != nil {
		return store.Draw{}, err
	}
	if q.SystemKey == "" {
		q.SystemKey = DefaultSystemKey
	}
	pick := func(pool []int64) ([]int64, uint64, error) {
		if q.K > len(pool) {
			of := "in this project"
			if q.System != "" {
				of = fmt.Sprintf("of system %q", q.System)
			}
			return nil, 0, attune.Invalid(FieldK, fmt.Sprintf("k is %d, but only %d judge-only items %s are left to draw", q.K, len(pool), of))
		}
		ids := make([]string, len(pool))
		for i, id := range pool {
			ids[i] = strconv.FormatInt(id, 10)
		}
		d, err := ppi.Draw(ids, q.K, q.Seed)
		if err != nil {
			return nil, 0, err
		}
		picked := make([]int64, len(d.IDs))
		for i, s := range d.IDs {
			if picked[i], err = strconv.ParseInt(s, 10, 64); err != nil {
				return nil, 0, err
			}
		}
		return picked, d.Seed, nil
	}
	return st.DrawItems(ctx, store.DrawRequest{ProjectID: q.ProjectID, ActorID: q.ActorID, K: q.K, SystemKey: q.SystemKey, System: q.System}, pick)
}

// ParseSeed reads a seed as the API and the command line give it: a
// decimal uint64, "" for a fresh one.
func ParseSeed(s string) (uint64, error) {
	if s == "" {
		return 0, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil || v == 0 {
		return 0, attune.Invalid(FieldSeed, fmt.Sprintf("seed %q must be a whole number from 1 to 18446744073709551615, or left out for a fresh one", s))
	}
	return v, nil
}

// sampleOf says on what estimates rest, given the items labelled: when at
// least one item is labelled and every labelled item was drawn by attune,
// which draws (and seeds) made the sample and how many of the drawn items people have
// labelled so far; otherwise ppi.SampleCaveat, since attune cannot vouch
// for a sample it did not draw.
func sampleOf(draws []store.Draw, labelledItems []int64) string {
	drawn := map[int64]bool{}
	total, bySystem := 0, false
	for _, d := range draws {
		for _, it := range d.Items {
			drawn[it.ID] = true
		}
		total += len(d.Items)
		bySystem = bySystem || d.System != ""
	}
	labelled, ofDrawn := len(labelledItems), 0
	for _, id := range labelledItems {
		if drawn[id] {
			ofDrawn++
		}
	}
	if labelled == 0 || ofDrawn != labelled {
		return ppi.SampleCaveat
	}
	seeds := make([]string, len(draws))
	for i, d := range draws {
		seeds[i] = strconv.FormatUint(d.Seed, 10)
	}
	draw := "draws"
	if len(draws) == 1 {
		draw = "draw"
	}
	s := fmt.Sprintf("drawn by attune: every labelled item was drawn uniformly at random (%d %s, seeds %s); %d of the %d drawn items are labelled so far",
		len(draws), draw, strings.Join(seeds, ", "), ofDrawn, total)
	if bySystem {
		s += "; a draw of one system makes a uniform sample of that system, so the overall figure holds only if every system was drawn in proportion"
	}
	return s
}
