// Package atomicfile replaces files atomically: the new content goes to a
// temporary file in the same folder, which is synced, renamed over the
// target, and the folder synced, so a crash at any moment leaves either
// the old file or the new one, never a torn one.
//
// A temporary file is named after its target and locked (flock) by its
// writer until it is renamed, so that a cleaner can tell a dead writer's
// leftover (internal/cachedir, RemoveStale) from a live one's.
package atomicfile

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/flock"
)

// tempMark follows the target's name in its temporary files' names. Its
// '~' is a character that session names (and the caches' hex names)
// cannot carry, so the pattern of one target never matches the
// temporary file of another: with ".tmp-", session "n"'s pattern
// matched ".n.safetensors.tmp-1.safetensors.tmp-123", a temporary file
// of session "n.safetensors.tmp-1".
const tempMark = "~tmp-"

// TempPattern is the name pattern of the temporary files Write creates
// beside path (a process killed mid-write leaves one behind).
func TempPattern(path string) string { return "." + filepath.Base(path) + tempMark + "*" }

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
	// Held until the rename: the file is live. Where the file system
	// cannot lock, cleaners go by age alone.
	flock.Hold(tmp)
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
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	// Closed after the rename, so the lock covers the temporary name for
	// as long as it exists; the data were synced, so closing has nothing
	// left to report.
	tmp.Close()
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// RemoveStale deletes the temporary files that interrupted Writes of
// path left behind, those of earlier builds (".NAME.tmp-DIGITS") too,
// and leaves a file that a live writer holds.
func RemoveStale(path string) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	leftovers, _ := filepath.Glob(filepath.Join(dir, TempPattern(path)))
	// Before tempMark: only digits after ".tmp-" (what os.CreateTemp
	// adds) make a temporary file of path and not of "path.tmp-1".
	legacy, _ := filepath.Glob(filepath.Join(dir, "."+base+".tmp-*"))
	for _, f := range legacy {
		if digits(strings.TrimPrefix(filepath.Base(f), "."+base+".tmp-")) {
			leftovers = append(leftovers, f)
		}
	}
	for _, f := range leftovers {
		if free, err := flock.Free(f); free || err != nil {
			os.Remove(f)
		}
	}
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
