package docs

import (
	"container/list"
	"sync"
)

// lru is the process-local cache of extracted documents, bounded by entry
// count and by an estimate of the bytes each entry holds (text, chunks and
// vectors). Restart discards it; it is never a document store.
type lru struct {
	mu       sync.Mutex // guards the fields below
	maxItems int
	maxBytes int64
	bytes    int64
	order    *list.List // front = most recently used; values are *entry
	items    map[string]*list.Element
}

func newLRU(maxItems int, maxBytes int64) *lru {
	return &lru{maxItems: maxItems, maxBytes: maxBytes, order: list.New(), items: map[string]*list.Element{}}
}

func (c *lru) get(key string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if !ok {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*entry)
}

// put adds or replaces an entry and evicts from the back until the cache
// fits; the newest entry stays even when it alone is over the byte budget.
func (c *lru) put(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[e.key]; ok {
		c.bytes -= el.Value.(*entry).cost
		c.order.Remove(el)
	}
	e.cost = e.estimate()
	c.items[e.key] = c.order.PushFront(e)
	c.bytes += e.cost
	c.evict()
}

// grew re-measures an entry after vectors were added to it.
func (c *lru) grew(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[e.key]; !ok {
		return
	}
	n := e.estimate()
	c.bytes += n - e.cost
	e.cost = n
	c.evict()
}

func (c *lru) evict() {
	for c.order.Len() > 1 && (c.order.Len() > c.maxItems || c.bytes > c.maxBytes) {
		el := c.order.Back()
		e := el.Value.(*entry)
		c.order.Remove(el)
		delete(c.items, e.key)
		c.bytes -= e.cost
	}
}

func (c *lru) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
