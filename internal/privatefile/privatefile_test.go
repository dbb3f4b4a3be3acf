package privatefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// asRoot skips a test that gives a file away to another user.
func asRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: giving a file to another user needs root")
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		reason string
		make   func(path string)
		want   string // "" when trusted
	}{
		{"a file of the user's, 0600", func(p string) { os.WriteFile(p, []byte("x"), 0o600) }, ""},
		{"read-only for all (0444): no one else may write it", func(p string) { os.WriteFile(p, []byte("x"), 0o444) }, ""},
		{"group-writable", func(p string) { os.WriteFile(p, []byte("x"), 0o600); os.Chmod(p, 0o620) }, "may be written by others"},
		{"writable by all", func(p string) { os.WriteFile(p, []byte("x"), 0o600); os.Chmod(p, 0o666) }, "may be written by others"},
		{"a link to a good file", func(p string) {
			target := filepath.Join(t.TempDir(), "target")
			os.WriteFile(target, []byte("x"), 0o600)
			os.Symlink(target, p)
		}, "cannot be opened"},
		{"a FIFO (opening it does not hang)", func(p string) { syscall.Mkfifo(p, 0o600) }, "is not a regular file"},
		{"a folder", func(p string) { os.Mkdir(p, 0o700) }, "is not a regular file"},
		{"another user's file", func(p string) {
			asRoot(t)
			os.WriteFile(p, []byte("x"), 0o600)
			os.Chown(p, 4242, 4242)
		}, "belongs to uid 4242, not to this user"},
	}
	for i, c := range cases {
		t.Run(c.reason, func(t *testing.T) {
			path := filepath.Join(dir, strings.Repeat("e", i+1))
			c.make(path)
			f, _, err := Open(path)
			if f != nil {
				f.Close()
			}
			var perr *Error
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !errors.As(err, &perr) || err.Error() != c.want):
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	if _, _, err := Open(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want one that is fs.ErrNotExist", err)
	}
	path := filepath.Join(dir, "big")
	os.WriteFile(path, make([]byte, 10), 0o600)
	if _, err := Read(path, 9); !errors.Is(err, ErrTooLarge) {
		t.Errorf("10 bytes read with a limit of 9: %v", err)
	}
	if b, err := Read(path, 10); err != nil || len(b) != 10 {
		t.Errorf("10 bytes read with a limit of 10: %d bytes, %v", len(b), err)
	}
}

func TestDir(t *testing.T) {
	perm := func(p string) os.FileMode {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	dir := filepath.Join(t.TempDir(), "a", "cache")
	if err := Dir(dir); err != nil || perm(dir) != 0o700 {
		t.Errorf("a new folder: %v, mode %v", err, perm(dir))
	}
	os.Chmod(dir, 0o777)
	if err := Dir(dir); err != nil || perm(dir) != 0o700 {
		t.Errorf("a 0777 folder of the user's: %v, mode %v, want narrowed to 0700", err, perm(dir))
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	if err := Dir(file); err == nil {
		t.Error("a file was taken for a folder")
	}
	t.Run("another user's folder", func(t *testing.T) {
		asRoot(t)
		os.Chown(dir, 4242, 4242)
		os.Chmod(dir, 0o777)
		if err := Dir(dir); err == nil || !strings.Contains(err.Error(), "belongs to uid 4242") {
			t.Errorf("err = %v", err)
		}
		if perm(dir) != 0o777 {
			t.Error("another user's folder was changed")
		}
	})
}
