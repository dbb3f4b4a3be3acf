package controllers

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/internal/flock"
)

// cacheChildEnv makes the test binary a child of TestCorruptCacheEntry:
// one run of the app against the cache folder it names.
const cacheChildEnv = "DRIFTWOOD_TEST_CACHE_CHILD"

// TestCorruptCacheEntry corrupts a compile-cache entry at several places
// (in its header, its machine code, 35 % in, its end; truncated) and
// then runs the controller in a child process, as a new run of the app
// would: it must work (recompiled), say once what happened, and leave a
// good entry. Before the entry was checked, inverted machine code gave
// SIGSEGV or SIGILL in the guest's call on every run: native code
// running outside the sandbox. The child bounds what a crash or a loop
// in corrupt code can do to the test.
func TestCorruptCacheEntry(t *testing.T) {
	if dir := os.Getenv(cacheChildEnv); dir != "" {
		cacheChild(t, dir)
		return
	}
	dir := filepath.Join(t.TempDir(), "wasm")
	rt := newWasmRuntime(defaultLimits(), dir)
	m, err := rt.Load("only7", []byte(allowOnly(7)))
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	entry := func() string {
		files, _ := filepath.Glob(filepath.Join(dir, m.SHA256+"-*.cwasm"))
		if len(files) != 1 {
			t.Fatalf("cache entries %v, want one", files)
		}
		return files[0]
	}
	good, err := os.ReadFile(entry())
	if err != nil {
		t.Fatal(err)
	}
	f, err := elf.NewFile(strings.NewReader(string(good)))
	if err != nil {
		t.Fatalf("a cache entry is an ELF object: %v", err)
	}
	text := f.Section(".text")
	if text == nil {
		t.Fatal("no .text in the cache entry")
	}
	invert := func(at int) func([]byte) []byte {
		return func(b []byte) []byte {
			for i := at; i < min(at+256, len(b)); i++ {
				b[i] ^= 0xff
			}
			return b
		}
	}
	cases := []struct {
		reason  string
		corrupt func([]byte) []byte
	}{
		{"the ELF header", invert(0)},
		{"the start of the machine code", invert(int(text.Offset))},
		{"further into the machine code", invert(int(text.Offset) + 256)},
		{"35 % in", invert(len(good) * 35 / 100)},
		{"the middle", invert(len(good) / 2)},
		{"the end", invert(len(good) - 256)},
		{"truncated to half", func(b []byte) []byte { return b[:len(b)/2] }},
	}
	for _, c := range cases {
		bad := c.corrupt(slices.Clone(good))
		// Replaced by rename, as a writer does (Load maps entries).
		tmp := filepath.Join(dir, "tmp")
		if err := os.WriteFile(tmp, bad, 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, entry()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCorruptCacheEntry$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), cacheChildEnv+"="+dir)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil || !strings.Contains(string(out), "child: reply ok") {
			t.Errorf("%s: the run failed (%v):\n%s", c.reason, err, lastLines(string(out), 8))
			continue
		}
		if !strings.Contains(string(out), "logs: only7: compile cache: ") || strings.Count(string(out), "compile cache") != 1 {
			t.Errorf("%s: want one log line about the cache entry:\n%s", c.reason, lastLines(string(out), 8))
		}
		if now, err := os.ReadFile(entry()); err != nil || slices.Equal(now, bad) {
			t.Errorf("%s: the corrupt entry was left in the cache (%v)", c.reason, err)
		}
	}
}

// cacheChild is one run of the app: load the controller through the
// cache in dir and reply with it.
func cacheChild(t *testing.T, dir string) {
	h := newHarness(t)
	rt := newWasmRuntime(defaultLimits(), dir)
	defer rt.Close()
	m, err := rt.Load("only7", []byte(allowOnly(7)))
	if err != nil {
		t.Fatal(err)
	}
	h.rt = rt
	d := h.driver(nil)
	defer d.Close()
	d.Use(m, "")
	reply, _, _ := h.reply(t, d, nil, 12, 1.5, nil)
	if len(reply) != 12 || slices.ContainsFunc(reply, func(id int32) bool { return id != 7 }) {
		t.Fatalf("reply %v: want twelve 7s", reply)
	}
	fmt.Printf("child: reply ok\nlogs: %s\n", h.logText())
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestCachePermissions: the cache folder is private to the user (0700,
// an existing one narrowed), entries are read-only (0400), and an entry
// that others may write, a link, or (run as root) a file or folder of
// another user's is not used.
func TestCachePermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache", "wasm")
	src := []byte(allowOnly(3))
	load := func(reason string) *Module {
		t.Helper()
		rt := newWasmRuntime(defaultLimits(), dir)
		defer rt.Close()
		m, err := rt.Load("a", src)
		if err != nil {
			t.Fatalf("%s: %v", reason, err)
		}
		return m
	}
	notice := func(m *Module) string {
		if n := m.notice.Load(); n != nil {
			return *n
		}
		return ""
	}
	entry := func() string {
		files, _ := filepath.Glob(filepath.Join(dir, "*.cwasm"))
		if len(files) != 1 {
			t.Fatalf("cache entries %v, want one", files)
		}
		return files[0]
	}
	perm := func(path string) os.FileMode {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}

	load("a fresh cache")
	if p := perm(dir); p != 0o700 {
		t.Errorf("new cache folder has mode %v, want 0700", p)
	}
	if p := perm(entry()); p != 0o400 {
		t.Errorf("cache entry has mode %v, want 0400", p)
	}
	os.Chmod(dir, 0o755)
	if m := load("a cache folder others may read"); notice(m) != "" || perm(dir) != 0o700 {
		t.Errorf("a 0755 folder of the user's: mode %v after a load, notice %q; want 0700, no notice", perm(dir), notice(m))
	}

	for _, c := range []struct {
		reason, want string
		spoil        func(path string)
	}{
		{"an entry others may write", "may be written by others", func(p string) { os.Chmod(p, 0o666) }},
		{"an entry that is a link", "cannot be opened", func(p string) {
			good, _ := os.ReadFile(p)
			target := filepath.Join(t.TempDir(), "target")
			os.WriteFile(target, good, 0o400)
			os.Remove(p)
			os.Symlink(target, p)
		}},
		{"an entry of another user's (as root)", "belongs to uid 4242", func(p string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give a file away")
			}
			os.Chown(p, 4242, 4242)
		}},
	} {
		t.Run(c.reason, func(t *testing.T) {
			spoilt := entry()
			c.spoil(spoilt)
			m := load(c.reason)
			if n := notice(m); !strings.Contains(n, c.want) || !strings.Contains(n, "deleted, compiled again") {
				t.Errorf("notice %q, want one saying %q", n, c.want)
			}
			if fresh := entry(); perm(fresh) != 0o400 {
				t.Errorf("the entry written again has mode %v", perm(fresh))
			}
		})
	}

	t.Run("a folder of another user's (as root)", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("needs root to give a folder away")
		}
		os.RemoveAll(dir)
		os.MkdirAll(dir, 0o755)
		os.Chown(dir, 4242, 4242)
		m := load("a foreign folder")
		if n := notice(m); !strings.Contains(n, "compile cache not used") || !strings.Contains(n, "belongs to uid 4242") {
			t.Errorf("notice %q", n)
		}
		if files, _ := os.ReadDir(dir); len(files) != 0 {
			t.Errorf("wrote %d files into another user's folder", len(files))
		}
	})
}

// TestCacheIsBounded: the compile cache keeps under its limit, the
// least recently used entries leaving first (a load from the cache
// counts as a use), and the temporary files of compiles killed
// mid-write leave once they are old, while a live writer's stays.
// Before, nothing was ever removed: 30 edited versions of a controller
// made 30 entries, and a killed compile's 73 MB temporary file stayed.
func TestCacheIsBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "wasm")
	rt := newWasmRuntime(defaultLimits(), dir)
	defer rt.Close()
	load := func(tok int) *Module {
		t.Helper()
		m, err := rt.Load("v", []byte(allowOnly(tok)))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	entries := func() (map[string]bool, int64) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.cwasm"))
		names, total := map[string]bool{}, int64(0)
		for _, f := range files {
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			names[strings.SplitN(filepath.Base(f), "-", 2)[0]] = true
			total += fi.Size()
		}
		return names, total
	}
	first := load(0)
	_, one := entries()
	rt.cacheLimit = 3*one + one/2 // room for three entries

	// A dead writer's temporary file (an earlier build's name), an hour
	// old, and a live writer's, as old but held.
	old := time.Now().Add(-2 * time.Hour)
	dead := filepath.Join(dir, ".cwasm-123")
	os.WriteFile(dead, make([]byte, 1000), 0o600)
	live := filepath.Join(dir, ".x.cwasm~tmp-456")
	f, err := os.Create(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := flock.Hold(f); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dead, live} {
		os.Chtimes(p, old, old)
	}

	var mods []*Module
	for tok := 1; tok <= 6; tok++ {
		// Entries' times have a resolution of the file system's: keep
		// the order of use plain.
		time.Sleep(10 * time.Millisecond)
		mods = append(mods, load(tok))
		if tok == 4 {
			time.Sleep(10 * time.Millisecond)
			load(0) // from the cache: most recently used again
		}
	}
	names, total := entries()
	if total > rt.cacheLimit || len(names) != 3 {
		t.Errorf("%d entries, %d bytes; want 3, at most %d", len(names), total, rt.cacheLimit)
	}
	for _, m := range []*Module{mods[4], mods[5]} {
		if !names[m.SHA256] {
			t.Errorf("a newest entry was removed")
		}
	}
	if !names[first.SHA256] {
		t.Errorf("the entry loaded after the fourth was written was removed before it")
	}
	if _, err := os.Stat(dead); err == nil {
		t.Error("a dead writer's old temporary file was kept")
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a live writer's temporary file was removed: %v", err)
	}
}
