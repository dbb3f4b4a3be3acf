package mlxc

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// MinCAPI is the oldest mlx-c release whose headers declare every function
// the forward pass needs (0.1.x has no mlx_version, mlx_transpose_axes nor
// mlx_take_axis). A test checks that every release from it on binds.
const MinCAPI = "0.2.0"

// Upgrade is the command that gets a current mlx-c on a Mac.
const Upgrade = "brew upgrade mlx-c"

// Release is the mlx-c release a library was recognised as. mlx-c has no
// version function of its own (mlx_version is MLX's), so a release is
// recognised by the functions it added.
type Release struct {
	// Name is the release, such as "0.5.0", or "0.4.0 or 0.4.1" when no
	// function tells them apart (their declarations are then the same).
	Name string
	// Newer is set when the library is, or may be, newer than every
	// release whose headers were read: it is bound with the newest one's
	// declarations, which a function of it may no longer have, so it is
	// self-checked before use. Why says what made it so.
	Newer bool
	Why   string

	index int // into releases
}

// markers are the functions that tell release i from the one before:
// declared in i, not in i-1, and still declared by every later release.
func markers(i int) []string { return allMarkers()[i] }

var allMarkers = sync.OnceValue(func() [][]string {
	out := make([][]string, len(releases))
	for i := range releases {
		out[i] = findMarkers(i)
	}
	return out
})

func findMarkers(i int) []string {
	var out []string
	for _, name := range namesIn(i) {
		stays := true
		for j := i + 1; j < len(releases); j++ {
			if _, ok := declIn(name, j); !ok {
				stays = false
			}
		}
		if _, before := declIn(name, i-1); stays && (i == 0 || !before) {
			out = append(out, name)
		}
	}
	return out
}

// releaseIndex is the index of the release called name.
func releaseIndex(name string) int {
	for i, r := range releases {
		if r.name == name {
			return i
		}
	}
	panic("mlxc: no release " + name + " in the table")
}

// detect recognises the release of the library at path: the newest
// release one of whose markers it has (found by lookup), then whether it
// exports functions no release read declares (exports, nil when the
// symbol table could not be read: then it is taken as possibly newer).
//
// # Errors
//
// *TooOldError for a release before MinCAPI or one older than every
// release read; *MissingSymbolsError when it has none of the functions.
func detect(path string, lookup func(string) bool, exports []string) (Release, error) {
	found := -1
	for i := len(releases) - 1; i >= 0 && found < 0; i-- {
		m := markers(i)
		if len(m) == 0 {
			continue
		}
		// Any one marker will do: a build may leave out a function its
		// headers declare, but no release has a later release's markers.
		for _, name := range m {
			if lookup(name) {
				found = i
				break
			}
		}
	}
	if found < 0 {
		n := 0
		for _, s := range new(api).symbols() {
			if lookup(s.name) {
				n++
			}
		}
		if n == 0 {
			return Release{}, &MissingSymbolsError{Path: path, Names: []string{"mlx_version"}, Total: 1}
		}
		return Release{}, &TooOldError{Path: path, Found: "older than " + releases[0].name}
	}
	// The releases just before found with no marker of their own are
	// indistinguishable from it.
	r := Release{Name: releases[found].name, index: found}
	for j := found - 1; j >= 0 && len(markers(j+1)) == 0; j-- {
		r.Name = releases[j].name + " or " + r.Name
	}
	if found == 0 {
		r.Name += " or older" // the oldest read has every function as its markers
	}
	if found < releaseIndex(MinCAPI) {
		return r, &TooOldError{Path: path, Found: r.Name}
	}
	switch unknown := unknownNames(exports); {
	case exports == nil:
		r.Newer, r.Why = true, "its exported functions could not be read"
	case len(unknown) > 0:
		r.Newer = true
		r.Why = fmt.Sprintf("it exports %d function%s no mlx-c release up to %s declares (%s)",
			len(unknown), plural(len(unknown)), releases[len(releases)-1].name, strings.Join(unknown[:min(3, len(unknown))], ", "))
	}
	return r, nil
}

// unknownNames are the names that no release read declares, sorted.
func unknownNames(exports []string) []string {
	var out []string
	for _, n := range exports {
		if !known(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// newerMLX reports whether MLX version v is newer than the one the
// newest release read builds against, which makes a library recognised
// as that release possibly a newer mlx-c.
func newerMLX(v string) bool {
	return compareVersions(v, releases[len(releases)-1].mlx) > 0
}

// compareVersions compares dotted version numbers ("0.31.2"), ignoring
// anything after a '-' or '+'.
func compareVersions(a, b string) int {
	parse := func(s string) []int {
		s, _, _ = strings.Cut(s, "-")
		s, _, _ = strings.Cut(s, "+")
		var out []int
		for _, f := range strings.Split(s, ".") {
			n := 0
			fmt.Sscanf(f, "%d", &n)
			out = append(out, n)
		}
		return out
	}
	x, y := parse(a), parse(b)
	for i := 0; i < max(len(x), len(y)); i++ {
		var p, q int
		if i < len(x) {
			p = x[i]
		}
		if i < len(y) {
			q = y[i]
		}
		if p != q {
			if p < q {
				return -1
			}
			return 1
		}
	}
	return 0
}
