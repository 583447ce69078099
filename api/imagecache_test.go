package api

import (
	"bytes"
	"testing"
)

// The image cache keeps the most recently used images within its bounds
// and forgets a deleted run's images.
func TestImageCache(t *testing.T) {
	c := newImageCache(3, 100)
	img := func(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }
	c.put("a/1", img(10))
	c.put("a/2", img(10))
	c.put("b/1", img(10))
	c.get("a/1")          // a/1 is now the most recent
	c.put("b/2", img(10)) // over 3 entries: drops a/2, the least recent
	c.put("c/1", img(26)) // over a quarter of the bytes: not kept
	c.put("c/2", img(25)) // 4 entries again: drops b/1
	for key, want := range map[string]bool{"a/1": true, "a/2": false, "b/1": false, "b/2": true, "c/1": false, "c/2": true} {
		if _, ok := c.get(key); ok != want {
			t.Errorf("%s cached: %v, want %v", key, ok, want)
		}
	}
	c.dropRun("a")
	if _, ok := c.get("a/1"); ok || c.bytes != 35 || c.order.Len() != 2 {
		t.Errorf("after dropping run a: a/1 kept %v, %d bytes in %d entries", ok, c.bytes, c.order.Len())
	}
}
