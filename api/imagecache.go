package api

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// imageCache keeps rendered charts on disk under the data directory
// (charts/RUN_ID/...), so that they survive restarts, bounded in bytes:
// past the bound the least recently used images are removed. Keys are
// "RUN_ID/name" with name a file name (see chartKey); a run's images go
// when it is deleted.
type imageCache struct {
	dir      string
	maxBytes int64

	mu      sync.Mutex
	bytes   int64
	entries map[string]*cachedImage
}

// cachedImage is one image file's size and last use.
type cachedImage struct {
	size int64
	used time.Time
}

// openImageCache opens the cache in dir, counting the images a previous
// process left there; it removes the oldest when over maxBytes.
func openImageCache(dir string, maxBytes int64) (*imageCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	c := &imageCache{dir: dir, maxBytes: maxBytes, entries: map[string]*cachedImage{}}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".tmp-") {
			return os.Remove(p)
		}
		key, _ := filepath.Rel(dir, p)
		c.entries[filepath.ToSlash(key)] = &cachedImage{size: info.Size(), used: info.ModTime()}
		c.bytes += info.Size()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("chart cache: %w", err)
	}
	c.mu.Lock()
	c.evict()
	c.mu.Unlock()
	return c, nil
}

func (c *imageCache) path(key string) string { return filepath.Join(c.dir, filepath.FromSlash(key)) }

// get returns the image stored under key.
func (c *imageCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if ok {
		e.used = time.Now()
	}
	c.mu.Unlock()
	if !ok {
		return nil, false
	}
	img, err := os.ReadFile(c.path(key))
	if err != nil {
		c.forget(key)
		return nil, false
	}
	now := time.Now()
	os.Chtimes(c.path(key), now, now) // the order of use survives a restart
	return img, true
}

// put stores img under key, removing the least recently used images to
// stay within the bound; an image larger than a quarter of it is not
// kept. A failure to write only loses the image.
func (c *imageCache) put(key string, img []byte) {
	if int64(len(img)) > c.maxBytes/4 {
		return
	}
	p := c.path(key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-")
	if err != nil {
		return
	}
	_, err = tmp.Write(img)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[key]; ok {
		c.bytes -= old.size
	}
	c.entries[key] = &cachedImage{size: int64(len(img)), used: time.Now()}
	c.bytes += int64(len(img))
	c.evict()
}

// evict removes the least recently used images while over the bound; mu
// is held.
func (c *imageCache) evict() {
	if c.bytes <= c.maxBytes {
		return
	}
	keys := make([]string, 0, len(c.entries))
	for k := range c.entries {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.entries[keys[i]].used.Before(c.entries[keys[j]].used) })
	for _, k := range keys {
		if c.bytes <= c.maxBytes {
			return
		}
		os.Remove(c.path(k))
		c.bytes -= c.entries[k].size
		delete(c.entries, k)
	}
}

// forget drops an entry whose file went missing.
func (c *imageCache) forget(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		c.bytes -= e.size
		delete(c.entries, key)
	}
}

// dropRun removes the images of one run.
func (c *imageCache) dropRun(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, e := range c.entries {
		if strings.HasPrefix(key, id+"/") {
			c.bytes -= e.size
			delete(c.entries, key)
		}
	}
	os.RemoveAll(c.path(id))
}

// dropAll removes every image: they are drawn again on demand (a delete
// on a full disk makes room so).
func (c *imageCache) dropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key := range c.entries {
		os.Remove(c.path(key))
	}
	c.entries = map[string]*cachedImage{}
	c.bytes = 0
}
