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
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/driftwoodlabs/driftwood/internal/atomicfile"
	"github.com/driftwoodlabs/driftwood/internal/cachedir"
	"github.com/driftwoodlabs/driftwood/internal/privatefile"
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
//
// Each store trims the folder to maxCacheBytes bytes, the least recently
// used entries first (a load touches its entry's time), and removes the
// temporary files of writers that died mid-write (internal/cachedir).

// maxCacheBytes bounds the compile cache's bytes: the five shipped modules
// take 54 MB compiled (8.6-12.5 MB each), a small Go-built controller
// about 2 MB per edited version.
const maxCacheBytes = 256 << 20

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
func (rt *wasmRuntime) entryPrefix(modSHA string) string {
	return filepath.Join(rt.cacheDir, modSHA+"-"+settingsKey)
}

// useCache reports whether the disk cache may be used, checking the
// folder once per runtime (privatefile.Dir); when not, note says why.
func (rt *wasmRuntime) useCache() (ok bool, note string) {
	if rt.cacheDir == "" {
		return false, ""
	}
	rt.cacheOnce.Do(func() {
		if err := privatefile.Dir(rt.cacheDir); err != nil {
			rt.cacheOff = fmt.Sprintf("compile cache not used (%v): controllers compile at each load", err)
		}
	})
	return rt.cacheOff == "", rt.cacheOff
}

// loadCached returns module modSHA from its cache entry, or nil when
// there is no good one; entries that fail their checks are deleted, and
// note says so.
func (rt *wasmRuntime) loadCached(modSHA string) (mod *wasmtime.Module, note string) {
	prefix := rt.entryPrefix(modSHA)
	paths, _ := filepath.Glob(prefix + "-*.cwasm")
	var bad []string
	for _, path := range paths {
		mod, err := rt.deserialize(path, modSHA, strings.TrimSuffix(strings.TrimPrefix(path, prefix+"-"), ".cwasm"))
		if err == nil {
			now := time.Now()
			os.Chtimes(path, now, now) // most recently used: Trim keeps it
			return mod, strings.Join(bad, "; ")
		}
		os.Remove(path)
		bad = append(bad, fmt.Sprintf("compile cache: the entry in %s (%s…) %v: deleted, compiled again", rt.cacheDir, modSHA[:12], err))
	}
	return nil, strings.Join(bad, "; ")
}

// deserialize loads the cache entry at path if it is a regular file of
// this user's that no one else may write, and matches sum.
func (rt *wasmRuntime) deserialize(path, modSHA, sum string) (*wasmtime.Module, error) {
	f, _, err := privatefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
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
// place), removes its other entries and trims the folder to cacheLimit;
// a failure only costs the next load a compile.
func (rt *wasmRuntime) store(modSHA string, mod *wasmtime.Module) {
	data, err := mod.Serialize()
	if err != nil {
		return
	}
	h := entrySum(modSHA)
	h.Write(data)
	prefix := rt.entryPrefix(modSHA)
	path := prefix + "-" + hex.EncodeToString(h.Sum(nil)) + ".cwasm"
	if privatefile.Dir(rt.cacheDir) != nil { // emptied by hand meanwhile
		return
	}
	// A temporary file named after the entry and held by this process
	// until the rename (internal/atomicfile), so that Trim removes it
	// only once this process is gone.
	if atomicfile.WriteMode(path, 0o400, func(w io.Writer) error { _, err := w.Write(data); return err }) != nil {
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
	cachedir.Trim(rt.cacheDir, ".cwasm", 0, rt.cacheLimit)
}
