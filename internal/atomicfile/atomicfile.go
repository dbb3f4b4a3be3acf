// Package atomicfile replaces files atomically: the new content goes to a
// temporary file in the same folder, which is synced, renamed over the
// target, and the folder synced, so a crash at any moment leaves either
// the old file or the new one, never a torn one.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// TempPattern is the name pattern of the temporary files Write creates
// beside path (a process killed mid-write leaves one behind).
func TempPattern(path string) string { return "." + filepath.Base(path) + ".tmp-*" }

// Write replaces path with what fill writes, with mode 0644. If fill or
// any step fails, path is untouched and the temporary file removed.
func Write(path string, fill func(w io.Writer) error) error {
	return WriteMode(path, 0o644, fill)
}

// WriteMode is Write with the file's permissions given (0600 for what only
// its owner should read: conversations, the input history).
func WriteMode(path string, perm os.FileMode, fill func(w io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, TempPattern(path))
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	w := bufio.NewWriterSize(tmp, 1<<20)
	err = fill(w)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// RemoveStale deletes temporary files that an interrupted Write of path
// left behind.
func RemoveStale(path string) {
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(path), TempPattern(path)))
	for _, f := range leftovers {
		os.Remove(f)
	}
}
