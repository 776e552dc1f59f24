package claimcheck

import (
	"bytes"
	"container/list"
	"strings"
	"sync"
)

// cache keeps recently read payloads, least recently used out first, up to
// a total size. A replay decodes the same history again and again; without
// it each replay would read each large payload from the store once more.
// Objects are immutable (content-addressed and checked on read), so a hit
// is always right, except after a delete, which evicts.
type cache struct {
	limit int
	mu    sync.Mutex
	size  int
	order *list.List // of *entry, most recent first
	byKey map[string]*list.Element
}

type entry struct {
	name string
	data []byte
}

func newCache(limit int) *cache {
	return &cache{limit: limit, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns a copy, so a caller that changes its payload changes no
// later caller's.
func (c *cache) get(name string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[name]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return bytes.Clone(el.Value.(*entry).data), true
}

// put keeps data (not copied: the caller hands it over, and must not
// change it when put reports true) unless it alone exceeds the limit.
func (c *cache) put(name string, data []byte) bool {
	if len(data) > c.limit {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[name]; ok {
		return false
	}
	c.byKey[name] = c.order.PushFront(&entry{name: name, data: data})
	c.size += len(data)
	for c.size > c.limit {
		c.remove(c.order.Back())
	}
	return true
}

func (c *cache) evictPrefix(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, el := range c.byKey {
		if strings.HasPrefix(name, prefix) {
			c.remove(el)
		}
	}
}

func (c *cache) remove(el *list.Element) {
	e := c.order.Remove(el).(*entry)
	delete(c.byKey, e.name)
	c.size -= len(e.data)
}

// len is the number of cached payloads, for tests.
func (c *cache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}
