package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// entryFor is the path of path's cache entry in dir.
func entryFor(t *testing.T, dir, path string) string {
	t.Helper()
	sum := sha256.Sum256(readData(t, path))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".bin")
}

// waitGood waits until the entry at entry is a good one for path.
func waitGood(t *testing.T, entry, path string) error {
	t.Helper()
	return awaitRewrite(entry, sha256.Sum256(readData(t, path)))
}

// asRoot skips a test that gives a file away to another user.
func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: giving a file to another user needs root")
	}
}

// TestCacheTrustsNothing: an entry is used only when it is a regular
// file of the user's that no one else may write, in a private folder of
// the user's, and was decoded from this very tokenizer.json; any other
// is deleted, said in one note, and written again, and the tokenizer is
// the file's either way. Before, a planted or group-writable entry was
// used, and another tokenizer's valid entry renamed into place was used
// (the wrong tokenizer, under this file's fingerprint) and never
// rewritten.
func TestCacheTrustsNothing(t *testing.T) {
	plain, err := Load(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		reason, want string // want "": no note
		spoil        func(t *testing.T, dir, entry string)
	}{
		{"a good entry", "", func(t *testing.T, dir, entry string) {}},
		{"a group-writable entry", "may be written by others", func(t *testing.T, dir, entry string) { os.Chmod(entry, 0o660) }},
		{"an entry writable by all", "may be written by others", func(t *testing.T, dir, entry string) { os.Chmod(entry, 0o666) }},
		{"another user's entry (planted)", "belongs to uid 4242", func(t *testing.T, dir, entry string) {
			asRoot(t)
			os.Chown(entry, 4242, 4242)
		}},
		{"a link to a good entry", "cannot be opened", func(t *testing.T, dir, entry string) {
			target := filepath.Join(t.TempDir(), "target")
			os.Rename(entry, target)
			os.Symlink(target, entry)
		}},
		{"another tokenizer's valid entry renamed into place", "was decoded from another tokenizer.json", func(t *testing.T, dir, entry string) {
			if _, _, err := LoadCached(mistralPath, dir); err != nil {
				t.Fatal(err)
			}
			other := entryFor(t, dir, mistralPath)
			if err := waitGood(t, other, mistralPath); err != nil {
				t.Fatal(err)
			}
			os.Rename(other, entry)
		}},
		{"a damaged entry", "is damaged", func(t *testing.T, dir, entry string) {
			b, _ := os.ReadFile(entry)
			os.WriteFile(entry, flipped(b, len(b)/2), 0o600)
		}},
		{"an entry of an earlier format", "", func(t *testing.T, dir, entry string) {
			os.WriteFile(entry, []byte(cacheFormat+"1\nold"), 0o600)
		}},
		{"a folder others may enter", "", func(t *testing.T, dir, entry string) { os.Chmod(dir, 0o777) }},
	}
	for _, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tokenizers")
			if _, _, err := LoadCached(tinyPath, dir); err != nil {
				t.Fatal(err)
			}
			entry := entryFor(t, dir, tinyPath)
			if err := waitGood(t, entry, tinyPath); err != nil {
				t.Fatal(err)
			}
			c.spoil(t, dir, entry)
			tok, note, err := LoadCached(tinyPath, dir)
			if err != nil {
				t.Fatal(err)
			}
			if tok.Fingerprint() != plain.Fingerprint() || tok.VocabSize() != plain.VocabSize() || !sameIDs(tok, plain, "Hello, world! 12345") {
				t.Errorf("the tokenizer is not the file's: vocabulary %d, want %d", tok.VocabSize(), plain.VocabSize())
			}
			switch {
			case c.want == "" && note != "":
				t.Errorf("note %q, want none", note)
			case c.want != "" && (!strings.Contains(note, c.want) || !strings.Contains(note, "deleted, decoded again")):
				t.Errorf("note %q, want one saying %q, deleted", note, c.want)
			}
			if err := waitGood(t, entry, tinyPath); err != nil {
				t.Errorf("the entry was not written again: %v", err)
			}
			if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
				t.Errorf("folder mode %v, want 0700", fi.Mode().Perm())
			}
		})
	}

	t.Run("another user's folder", func(t *testing.T) {
		asRoot(t)
		dir := filepath.Join(t.TempDir(), "tokenizers")
		os.Mkdir(dir, 0o777)
		os.Chown(dir, 4242, 4242)
		tok, note, err := LoadCached(tinyPath, dir)
		if err != nil || tok.Fingerprint() != plain.Fingerprint() {
			t.Fatal(err)
		}
		if !strings.Contains(note, "tokenizer cache not used") || !strings.Contains(note, "belongs to uid 4242") {
			t.Errorf("note %q", note)
		}
		time.Sleep(100 * time.Millisecond)
		if files, _ := os.ReadDir(dir); len(files) != 0 {
			t.Errorf("wrote %d files into another user's folder", len(files))
		}
	})
}

func sameIDs(a, b *Tokenizer, text string) bool {
	x, y := a.Encode(text), b.Encode(text)
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return false
		}
	}
	return true
}
