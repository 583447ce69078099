package api

import (
	"bytes"
	"testing"
)

// The chart cache keeps the most recently used images within its byte
// bound, forgets a deleted run's images, and finds its images again when
// opened anew (a restart).
func TestImageCache(t *testing.T) {
	dir := t.TempDir()
	c, err := openImageCache(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	img := func(n int) []byte { return bytes.Repeat([]byte{'x'}, n) }
	c.put("a/1.svg", img(20))
	c.put("a/2.svg", img(20))
	c.put("b/1.svg", img(20))
	c.get("a/1.svg")          // a/1 is now the most recent
	c.put("b/2.svg", img(25)) // 85 bytes
	c.put("c/1.svg", img(26)) // over a quarter of the bytes: not kept
	c.put("c/2.svg", img(25)) // 110 bytes: drops a/2, the least recent
	want := map[string]bool{"a/1.svg": true, "a/2.svg": false, "b/1.svg": true, "b/2.svg": true, "c/1.svg": false, "c/2.svg": true}
	for key, ok := range want {
		if got, found := c.get(key); found != ok || (ok && len(got) == 0) {
			t.Errorf("%s cached: %v, want %v", key, found, ok)
		}
	}
	c.dropRun("a")
	if _, ok := c.get("a/1.svg"); ok || c.bytes != 70 {
		t.Errorf("after dropping run a: a/1 kept %v, %d bytes", ok, c.bytes)
	}
	again, err := openImageCache(dir, 100)
	if err != nil {
		t.Fatal(err)
	}
	if img, ok := again.get("b/2.svg"); !ok || len(img) != 25 || again.bytes != 70 {
		t.Errorf("after a restart: b/2 %v (%d bytes), %d bytes in all, want it and 70", ok, len(img), again.bytes)
	}
}
