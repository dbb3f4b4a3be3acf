package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/bytecodealliance/wasmtime-go/v39"
	"golang.org/x/sys/unix"
)

// settingsKey names the engine settings in compiled-module cache entries:
// a precompiled module only loads into an engine with the same settings.
const settingsKey = "wasmtime-go-v39.0.1-epoch"

// The compile cache holds one file per compiled module, named
// MODULE-SETTINGS-SUM.cwasm: the module's sha256, settingsKey, and the
// entry's checksum (entrySum). wasmtime runs a deserialised module's
// machine code as it is, outside the sandbox, so Load uses an entry only
// when it is a regular file of this user's that no one else may write, in
// a folder of this user's (0700), and its bytes match its checksum; any
// other entry is deleted and the module compiled again, and the module's
// first use says so in one log line. The file checked is the file mapped
// (through /dev/fd). docs/RATIONALE.md says why not a secret key.

// entrySum starts the checksum of a cache entry of module modSHA: SHA-256
// over the settings, the module's hash and then the entry's bytes, so
// that an entry is good only under the name it was written for.
func entrySum(modSHA string) hash.Hash {
	h := sha256.New()
	h.Write([]byte(settingsKey + "\x00" + modSHA + "\x00"))
	return h
}

// entryPrefix is the path of module modSHA's cache entries, up to the
// checksum.
func (rt *Runtime) entryPrefix(modSHA string) string {
	return filepath.Join(rt.cacheDir, modSHA+"-"+settingsKey)
}

// useCache reports whether the disk cache may be used, checking the
// folder once per runtime (privateDir); when not, note says why.
func (rt *Runtime) useCache() (ok bool, note string) {
	if rt.cacheDir == "" {
		return false, ""
	}
	rt.cacheOnce.Do(func() {
		if err := privateDir(rt.cacheDir); err != nil {
			rt.cacheOff = fmt.Sprintf("compile cache not used (%v): controllers compile at each load", err)
		}
	})
	return rt.cacheOff == "", rt.cacheOff
}

// privateDir makes dir (and missing parents) with mode 0700 and checks
// that it is a folder of this user's; one that others may read or write
// is narrowed to 0700.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir() || !ok:
		return fmt.Errorf("%s is not a folder", dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d)", dir, st.Uid, os.Geteuid())
	case fi.Mode().Perm()&0o077 != 0:
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// loadCached returns module modSHA from its cache entry, or nil when
// there is no good one; entries that fail their checks are deleted, and
// note says so.
func (rt *Runtime) loadCached(modSHA string) (mod *wasmtime.Module, note string) {
	prefix := rt.entryPrefix(modSHA)
	paths, _ := filepath.Glob(prefix + "-*.cwasm")
	var bad []string
	for _, path := range paths {
		mod, err := rt.deserialize(path, modSHA, strings.TrimSuffix(strings.TrimPrefix(path, prefix+"-"), ".cwasm"))
		if err == nil {
			return mod, strings.Join(bad, "; ")
		}
		os.Remove(path)
		bad = append(bad, fmt.Sprintf("compile cache: the entry in %s (%s…) %v: deleted, compiled again", rt.cacheDir, modSHA[:12], err))
	}
	return nil, strings.Join(bad, "; ")
}

// deserialize loads the cache entry at path if it is a regular file of
// this user's that no one else may write, and matches sum.
func (rt *Runtime) deserialize(path, modSHA, sum string) (*wasmtime.Module, error) {
	// O_NOFOLLOW: an entry is never a link; O_NONBLOCK: a FIFO does not hang.
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, errors.New("cannot be opened")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, errors.New("cannot be read")
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.Mode().IsRegular() || !ok:
		return nil, errors.New("is not a regular file")
	case int(st.Uid) != os.Geteuid():
		return nil, fmt.Errorf("belongs to uid %d, not to this user", st.Uid)
	case fi.Mode().Perm()&0o022 != 0:
		return nil, errors.New("may be written by others")
	}
	h := entrySum(modSHA)
	if _, err := io.Copy(h, f); err != nil {
		return nil, errors.New("cannot be read")
	}
	if hex.EncodeToString(h.Sum(nil)) != sum {
		return nil, errors.New("does not match its checksum")
	}
	// Mapped, not read: only the code pages that run are ever loaded.
	// Through the descriptor just checked, so that the file mapped is the
	// file checked whatever happens to the path meanwhile; entries are
	// replaced by rename, never rewritten in place, so a mapped file does
	// not change under an instance.
	mapped := fmt.Sprintf("/dev/fd/%d", f.Fd())
	if _, err := os.Stat(mapped); err != nil {
		mapped = path // no /dev/fd (Linux without /proc): the path checked a moment ago
	}
	mod, err := wasmtime.NewModuleDeserializeFile(rt.engine, mapped)
	if err != nil {
		return nil, fmt.Errorf("was refused by wasmtime (%v)", firstLine(err.Error()))
	}
	return mod, nil
}

// store writes module modSHA compiled to the cache, atomically and
// read-only (Load maps entries: they are replaced, never rewritten in
// place), and removes its other entries; a failure only costs the next
// load a compile.
func (rt *Runtime) store(modSHA string, mod *wasmtime.Module) {
	data, err := mod.Serialize()
	if err != nil {
		return
	}
	h := entrySum(modSHA)
	h.Write(data)
	prefix := rt.entryPrefix(modSHA)
	path := prefix + "-" + hex.EncodeToString(h.Sum(nil)) + ".cwasm"
	if os.MkdirAll(rt.cacheDir, 0o700) != nil { // emptied by hand meanwhile
		return
	}
	tmp, err := os.CreateTemp(rt.cacheDir, ".cwasm-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Chmod(tmp.Name(), 0o400) != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
		return
	}
	// Another build of the same module (compiles need not be identical),
	// or an entry named before entries carried a checksum.
	others, _ := filepath.Glob(prefix + "-*.cwasm")
	for _, o := range append(others, prefix+".cwasm") {
		if o != path {
			os.Remove(o)
		}
	}
}
