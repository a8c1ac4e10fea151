package respcache

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Disk is a size-bounded cache in a directory: one file per entry, an
// index in memory ordered by use. The least recently used entries go when
// the total passes MaxBytes; expired ones go when they are next read or at
// start. It is written by hand because the maintained LRU libraries bound
// entries by count, and audio entries range from kilobytes to megabytes:
// the bound that matters is bytes.
//
// Files are written to a temporary name and renamed into place, so a
// reader sees a whole entry or none, and a crash leaves at most a stray
// temporary file, removed at the next start.
type Disk struct {
	dir      string
	maxBytes int64
	maxEntry int64
	now      func() time.Time

	mu    sync.Mutex
	lru   *list.List // front: most recently used; values are *diskItem
	items map[string]*list.Element
	total int64
}

type diskItem struct {
	key     string
	size    int64
	expires time.Time
}

// OpenDisk opens (creating) the cache directory dir and indexes what it
// holds, removing expired, partial and foreign files. maxBytes bounds the
// total, maxEntry one entry.
func OpenDisk(dir string, maxBytes, maxEntry int64) (*Disk, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cache directory: %w", err)
	}
	d := &Disk{dir: dir, maxBytes: maxBytes, maxEntry: maxEntry, now: time.Now, lru: list.New(), items: map[string]*list.Element{}}
	type found struct {
		item diskItem
		used time.Time
	}
	var all []found
	err := filepath.WalkDir(dir, func(path string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		name := de.Name()
		key, ok := strings.CutSuffix(name, ".entry")
		if !ok || len(key) != 64 || filepath.Dir(path) != filepath.Join(dir, key[:2]) {
			return os.Remove(path) // a temporary file or something foreign
		}
		info, err := de.Info()
		if err != nil {
			return nil
		}
		expires, err := readExpiry(path)
		if err != nil || !expires.After(d.now()) {
			return os.Remove(path)
		}
		all = append(all, found{diskItem{key: key, size: info.Size(), expires: expires}, info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("index cache directory: %w", err)
	}
	// The last use is not stored: the file's time (its write) stands in
	// for it, oldest pushed first so the newest ends at the front.
	sort.Slice(all, func(i, j int) bool { return all[i].used.Before(all[j].used) })
	for i := range all {
		it := all[i].item
		d.items[it.key] = d.lru.PushFront(&it)
		d.total += it.size
	}
	d.evict()
	return d, nil
}

func readExpiry(path string) (time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, err
	}
	defer f.Close()
	var h [headerLen]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		return time.Time{}, err
	}
	_, expires, err := decode(h[:])
	return expires, err
}

func (d *Disk) path(key string) string {
	return filepath.Join(d.dir, key[:2], key+".entry")
}

// Get implements Store.
func (d *Disk) Get(_ context.Context, key string) (Entry, bool, error) {
	d.mu.Lock()
	el, ok := d.items[key]
	if ok {
		d.lru.MoveToFront(el)
	}
	d.mu.Unlock()
	if !ok {
		return Entry{}, false, nil
	}
	b, err := os.ReadFile(d.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		d.forget(key)
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	e, expires, err := decode(b)
	if err != nil || !expires.After(d.now()) {
		d.remove(key)
		return Entry{}, false, nil
	}
	return e, true, nil
}

// Put implements Store.
func (d *Disk) Put(_ context.Context, key string, e Entry, ttl time.Duration) error {
	if len(key) != 64 {
		return fmt.Errorf("cache: key %q is not a cache.Key", key)
	}
	b := encode(e, d.now().Add(ttl))
	size := int64(len(b))
	if size > d.maxEntry || size > d.maxBytes {
		return ErrTooLarge
	}
	path := d.path(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".put-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return errors.Join(werr, cerr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	d.mu.Lock()
	if el, ok := d.items[key]; ok {
		d.total -= el.Value.(*diskItem).size
		d.lru.Remove(el)
	}
	d.items[key] = d.lru.PushFront(&diskItem{key: key, size: size, expires: d.now().Add(ttl)})
	d.total += size
	d.mu.Unlock()
	d.evict()
	return nil
}

// evict removes the least recently used entries until the total fits.
func (d *Disk) evict() {
	for {
		d.mu.Lock()
		if d.total <= d.maxBytes || d.lru.Len() == 0 {
			d.mu.Unlock()
			return
		}
		it := d.lru.Remove(d.lru.Back()).(*diskItem)
		delete(d.items, it.key)
		d.total -= it.size
		d.mu.Unlock()
		_ = os.Remove(d.path(it.key))
	}
}

// remove drops key and its file.
func (d *Disk) remove(key string) {
	d.forget(key)
	_ = os.Remove(d.path(key))
}

// forget drops key from the index.
func (d *Disk) forget(key string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if el, ok := d.items[key]; ok {
		d.total -= el.Value.(*diskItem).size
		d.lru.Remove(el)
		delete(d.items, key)
	}
}

// Size returns the entries and bytes the cache holds.
func (d *Disk) Size() (entries int, bytes int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lru.Len(), d.total
}
