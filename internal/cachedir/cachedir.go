// Package cachedir keeps a cache folder bounded: the least recently
// written (or touched) entries leave first, and the temporary files of
// writers that died mid-write are cleared once they are old and no one
// holds them.
package cachedir

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/driftwoodlabs/driftwood/internal/flock"
)

// StaleTemp is the age after which a temporary file (a name starting with
// ".", as internal/atomicfile writes them) that no writer holds (flock)
// is a dead writer's. The lock is the proof; the age covers the instant
// between a file's creation and its lock, writers of earlier builds
// that did not lock, and file systems that cannot lock (there the age
// alone decides).
const StaleTemp = time.Hour

// Trim removes entries of dir whose names end in ext, newest kept first,
// from the first that would make more than maxFiles entries or more than
// maxBytes in all (0: no such bound), and temporary files older than
// StaleTemp that no writer holds. Errors are ignored: a cache that
// cannot be trimmed is still a cache.
func Trim(dir, ext string, maxFiles int, maxBytes int64) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	type file struct {
		path string
		info fs.FileInfo
	}
	var files []file
	for _, e := range entries {
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), "."):
			if time.Since(info.ModTime()) > StaleTemp && abandoned(path) {
				os.Remove(path)
			}
		case strings.HasSuffix(e.Name(), ext):
			files = append(files, file{path, info})
		}
	}
	slices.SortFunc(files, func(a, b file) int { return b.info.ModTime().Compare(a.info.ModTime()) })
	var total int64
	for i, f := range files {
		total += f.info.Size()
		if (maxFiles > 0 && i >= maxFiles) || (maxBytes > 0 && total > maxBytes) {
			os.Remove(f.path)
		}
	}
}

// abandoned reports whether no live writer holds the temporary file at
// path: its lock is free, or its file system cannot lock.
func abandoned(path string) bool {
	free, err := flock.Free(path)
	return free || err != nil
}
