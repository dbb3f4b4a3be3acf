package mlxc

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// has is a lookup over a set of exported names.
func has(names []string) func(string) bool {
	return func(n string) bool { return slices.Contains(names, n) }
}

// TestDetectEveryRelease gives detect exactly the functions each release
// declares and checks that it recognises that release, refuses those
// before MinCAPI naming the release and the upgrade, and trusts none of
// the known ones to be newer.
func TestDetectEveryRelease(t *testing.T) {
	minimum := releaseIndex(MinCAPI)
	for i, r := range releases {
		names := namesIn(i)
		got, err := detect("/x/libmlxc.dylib", has(names), names)
		if i < minimum {
			var old *TooOldError
			if !errors.As(err, &old) || !strings.Contains(err.Error(), "mlx-c "+r.name) || !strings.Contains(err.Error(), "brew upgrade mlx-c") {
				t.Errorf("mlx-c %s: %v, want a refusal naming it and the upgrade", r.name, err)
			}
			continue
		}
		if err != nil || got.index != i || got.Name != r.name || got.Newer {
			t.Errorf("mlx-c %s recognised as %+v, %v", r.name, got, err)
		}
	}
}

func TestDetectNewer(t *testing.T) {
	newest := len(releases) - 1
	names := namesIn(newest)
	for _, tc := range []struct {
		reason  string
		lookup  []string
		exports []string
		why     string // substring of Why; "" for not newer
		index   int
	}{
		{"a function no release declares makes it newer", names, append(slices.Clone(names), "mlx_zzz_new"),
			"it exports 1 function no mlx-c release up to " + releases[newest].name + " declares (mlx_zzz_new)", newest},
		{"an unreadable symbol table makes it possibly newer", names, nil, "could not be read", newest},
		{"a newer release that dropped the newest markers is still caught by its exports",
			slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(markers(newest), n) }),
			append(slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(markers(newest), n) }), "mlx_zzz_new"),
			"mlx_zzz_new", newest - 1},
	} {
		r, err := detect("/x/libmlxc.so", has(tc.lookup), tc.exports)
		if err != nil || !r.Newer || !strings.Contains(r.Why, tc.why) || r.index != tc.index {
			t.Errorf("%s: %+v, %v; want newer (%q) at %d", tc.reason, r, err, tc.why, tc.index)
		}
	}
	if _, err := detect("/x/libc.so", has(nil), []string{}); err == nil || !strings.Contains(err.Error(), "is not libmlxc") {
		t.Errorf("a library with none of the functions: %v", err)
	}
	if _, err := detect("/x/libmlxc.so", has([]string{"mlx_add", "mlx_matmul"}), []string{}); err == nil || !strings.Contains(err.Error(), "is mlx-c "+releases[0].name+" or older; Driftwood needs mlx-c "+MinCAPI) {
		t.Errorf("a library with a few functions and no release's markers: %v", err)
	}
}

func TestNewerMLX(t *testing.T) {
	pin := releases[len(releases)-1].mlx
	for _, tc := range []struct {
		v    string
		want bool
	}{{pin, false}, {"0.30.6", false}, {"0.32.0", true}, {"0.31.10", true}, {"1.0.0-dev", true}, {pin + "+local", false}} {
		if got := newerMLX(tc.v); got != tc.want {
			t.Errorf("newerMLX(%q) = %v with the newest pin %s", tc.v, got, pin)
		}
	}
}

// TestReleaseTableFresh regenerates the table from the mlx-c clone in
// MLXC_GIT and compares it with the committed file; without a clone (CI)
// it is skipped, since nothing of mlx-c is in the repository.
func TestReleaseTableFresh(t *testing.T) {
	dir := os.Getenv("MLXC_GIT")
	if dir == "" {
		t.Skip("skipped: set MLXC_GIT to a clone of ml-explore/mlx-c to check releases_gen.go")
	}
	src, err := os.ReadFile("gen.go")
	if err != nil {
		t.Fatal(err)
	}
	line := string(src[bytes.Index(src, []byte("//go:generate ")):])
	args := strings.Fields(line[:strings.IndexByte(line, '\n')])[1:]
	out := filepath.Join(t.TempDir(), "releases_gen.go")
	for i, a := range args {
		args[i] = strings.NewReplacer("${MLXC_GIT}", dir, "releases_gen.go", out).Replace(a)
	}
	cmd := exec.Command(args[0], args[1:]...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, msg)
	}
	want, _ := os.ReadFile(out)
	got, _ := os.ReadFile("releases_gen.go")
	if !bytes.Equal(got, want) {
		t.Error("releases_gen.go is stale: run MLXC_GIT=... go generate ./mlxbridge/internal/mlxc")
	}
}
