package wasmbuild

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
)

// Shipped builds every Go controller under src (each folder with a
// main.go, e.g. controllers/examples/regex) reproducibly, with the
// toolchain go.mod pins, and writes each gzip-compressed to out as
// NAME.wasm.gz. It returns the names built, sorted.
//
// The output depends only on the source and the toolchain: the build is
// reproducible (see Go), and gzip's header carries no name and no time.
func Shipped(src, out string) ([]string, error) {
	toolchain, err := Toolchain(src)
	if err != nil {
		return nil, err
	}
	names, err := Sources(src)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "driftwood-shipped-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	for _, name := range names {
		wasm := filepath.Join(tmp, name+".wasm")
		if err := Go(filepath.Join(src, name), wasm, toolchain); err != nil {
			return nil, err
		}
		data, err := os.ReadFile(wasm)
		if err != nil {
			return nil, err
		}
		gz, err := Compress(data)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(out, name+".wasm.gz"), gz, 0o644); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// Sources lists the folders under src that hold a Go controller (a
// main.go), sorted.
func Sources(src string) ([]string, error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(src, e.Name(), "main.go")); err == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// Compress gzips data at the best compression, with a header that holds
// only the comment "sha256:" and the hex SHA-256 of data (no file name, no
// modification time), so equal input gives equal output. The host knows
// the module by that hash without decompressing it (controllers'
// LoadFS).
func Compress(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	zw.Comment = "sha256:" + hex.EncodeToString(sum[:])
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
