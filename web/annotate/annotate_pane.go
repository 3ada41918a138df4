package annotate

import (
	"container/list"
	"context"
	"sync"

	"github.com/attune/attune/internal/rubric"
	aview "github.com/attune/attune/web/views/annotate"
)

// paneCacheSize bounds the rubric panes kept rendered: a server serves
// few rubric versions at a time, and each pane is some 50 KB.
const paneCacheSize = 32

// rubricPane is a rubric version's layout and its pane rendered once, for
// every page of that version to share (a version never changes).
type rubricPane struct {
	base aview.Rubric // aview.RubricBase; never changed once made
	pane *aview.Pane
}

// paneCache keeps the rubric panes of the versions used most recently,
// keyed by rubric version id. It is safe for concurrent use.
type paneCache struct {
	size  int
	mu    sync.Mutex
	order *list.List // of *paneEntry, most recently used first
	byID  map[int64]*list.Element
}

type paneEntry struct {
	id   int64
	pane *rubricPane
}

func newPaneCache(size int) *paneCache {
	return &paneCache{size: size, order: list.New(), byID: map[int64]*list.Element{}}
}

// get returns the pane of rubric version id (def), laying it out and
// rendering it when it is not kept. Two requests missing at once may both
// render it; either result is the same.
func (c *paneCache) get(ctx context.Context, id int64, def *rubric.Definition) (*rubricPane, error) {
	c.mu.Lock()
	if e, ok := c.byID[id]; ok {
		c.order.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*paneEntry).pane, nil
	}
	c.mu.Unlock()

	base := aview.RubricBase(def)
	pane, err := aview.RenderPane(ctx, base)
	if err != nil {
		return nil, err
	}
	rp := &rubricPane{base: base, pane: pane}

	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byID[id]; ok { // rendered meanwhile by another request
		c.order.MoveToFront(e)
		return e.Value.(*paneEntry).pane, nil
	}
	c.byID[id] = c.order.PushFront(&paneEntry{id: id, pane: rp})
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.byID, last.Value.(*paneEntry).id)
	}
	return rp, nil
}
