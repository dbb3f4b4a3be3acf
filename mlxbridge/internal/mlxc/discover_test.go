package mlxc

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

func TestCandidates(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		reason string
		s      Search
		want   []string
	}{
		{"macOS: Homebrew, /usr/local, then DYLD_LIBRARY_PATH",
			Search{GOOS: "darwin", Getenv: env("DYLD_LIBRARY_PATH", "/a:/b", "LD_LIBRARY_PATH", "/ignored")},
			[]string{"/opt/homebrew/lib/libmlxc.dylib", "/usr/local/lib/libmlxc.dylib", "/a/libmlxc.dylib", "/b/libmlxc.dylib"}},
		{"Linux: /usr/local, then LD_LIBRARY_PATH, without empty entries or repeats",
			Search{GOOS: "linux", Getenv: env("LD_LIBRARY_PATH", "/x::/usr/local/lib:/y")},
			[]string{"/usr/local/lib/libmlxc.so", "/x/libmlxc.so", "/y/libmlxc.so"}},
		{"DRIFTWOOD_MLXC is the only place when set",
			Search{GOOS: "linux", Path: "/cfg/libmlxc.so", Getenv: env(EnvVar, "/env/libmlxc.so", "LD_LIBRARY_PATH", "/x")},
			[]string{"/env/libmlxc.so"}},
		{"the configured path is the only place when the variable is unset",
			Search{GOOS: "darwin", Path: "/cfg/lib/libmlxc.dylib", Getenv: env()},
			[]string{"/cfg/lib/libmlxc.dylib"}},
		{"a folder gets the library's name",
			Search{GOOS: "linux", Getenv: env(EnvVar, dir)},
			[]string{filepath.Join(dir, "libmlxc.so")}},
		{"a path ending in a separator is a folder",
			Search{GOOS: "darwin", Path: "/nowhere/", Getenv: env()},
			[]string{"/nowhere/libmlxc.dylib"}},
	} {
		if got := tc.s.Candidates(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %v\nwant %v", tc.reason, got, tc.want)
		}
	}
}

func TestFind(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	lib := filepath.Join(b, "libmlxc.so")
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(a, "libmlxc.so"), 0o755) // a folder by that name is skipped
	got, err := Search{GOOS: "linux", Getenv: env("LD_LIBRARY_PATH", a+":"+b)}.Find()
	if err != nil || got != lib {
		t.Errorf("Find = %q, %v; want %q", got, err, lib)
	}

	_, err = Search{GOOS: "darwin", Getenv: env("DYLD_LIBRARY_PATH", a)}.Find()
	var nf *NotFoundError
	if !errors.As(err, &nf) || len(nf.Looked) != 3 {
		t.Fatalf("Find = %v, want a NotFoundError listing 3 places", err)
	}
	msg := err.Error()
	for _, want := range []string{"/opt/homebrew/lib/libmlxc.dylib", "/usr/local/lib/libmlxc.dylib", filepath.Join(a, "libmlxc.dylib"), "brew install mlx-c", EnvVar} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}
