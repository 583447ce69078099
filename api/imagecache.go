package api

import (
	"container/list"
	"strings"
	"sync"
)

// imageCache keeps the most recently drawn images that are costly to
// redraw (a timeline re-reads the run's trace), bounded in entries and
// bytes. Keys start with the run id and a slash.
type imageCache struct {
	mu         sync.Mutex
	maxEntries int
	maxBytes   int
	bytes      int
	order      *list.List // of *cachedImage, most recently used first
	byKey      map[string]*list.Element
}

type cachedImage struct {
	key string
	img []byte
}

func newImageCache(maxEntries, maxBytes int) *imageCache {
	return &imageCache{maxEntries: maxEntries, maxBytes: maxBytes, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the image stored under key.
func (c *imageCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byKey[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cachedImage).img, true
}

// put stores img under key, dropping the least recently used images to
// stay within the bounds; an image larger than a quarter of the byte bound
// is not kept.
func (c *imageCache) put(key string, img []byte) {
	if len(img) > c.maxBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[key]; ok {
		c.remove(e)
	}
	c.byKey[key] = c.order.PushFront(&cachedImage{key: key, img: img})
	c.bytes += len(img)
	for c.order.Len() > c.maxEntries || c.bytes > c.maxBytes {
		c.remove(c.order.Back())
	}
}

// dropRun forgets the images of one run.
func (c *imageCache) dropRun(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, e := range c.byKey {
		if strings.HasPrefix(key, id+"/") {
			c.remove(e)
		}
	}
}

func (c *imageCache) remove(e *list.Element) {
	ci := c.order.Remove(e).(*cachedImage)
	delete(c.byKey, ci.key)
	c.bytes -= len(ci.img)
}
