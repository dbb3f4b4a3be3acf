package controllers

import (
	"compress/gzip"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// Shipped holds the controllers built into the program, offered by every
// Host made afterwards after the files in its folders: a file in a
// host's folder overrides the shipped controller of the same name.
// Its files are NAME.wasm, NAME.wasm.gz (gzip-compressed) or NAME.wat at
// the root, one per name.
//
// # Notes
//
// It is nil unless the program imports controllers/shipped (which sets it
// to the shipped regex, json, choice, ban and maxwords in its init), or
// sets it itself, before making a Host. Without it a host offers only
// the files in its folders.
var Shipped fs.FS

// shippedName returns the controller name of a file in Shipped, or false
// when the file is not a controller.
func shippedName(file string) (string, bool) {
	for _, ext := range []string{".wasm.gz", ".wasm", ".wat"} {
		if name, ok := strings.CutSuffix(file, ext); ok && name != "" {
			return name, true
		}
	}
	return "", false
}

// LoadFS compiles the controller in file of fsys: a .wasm, a
// gzip-compressed .wasm.gz or a .wat, named after the file. Like Load,
// it uses the disk cache; the module has no Path, so it is never reloaded.
//
// # Notes
//
// A .wasm.gz whose gzip header comment is "sha256:" and the hex SHA-256
// of its content, as controllers/shipped is written, is known by that
// hash: when the disk cache holds that module, it is used without
// decompressing the file (which costs more than the rest of a cached
// load); otherwise the content is checked against the hash.
//
// # Errors
//
// A file that cannot be read, is larger than limitedfile.Controller
// (compressed or not), is not valid gzip, does not have the hash its
// header names, or fails as in Load gives an error naming the file.
func (rt *wasmRuntime) LoadFS(fsys fs.FS, file string) (*Module, error) {
	name, ok := shippedName(file)
	if !ok {
		return nil, fmt.Errorf("controller %s: not a .wasm, .wasm.gz or .wat file", file)
	}
	var m *Module
	var err error
	if sha := headerSum(fsys, file); sha != "" {
		m, err = rt.load(name, sha, func() ([]byte, error) {
			src, err := readFS(fsys, file)
			if err == nil && sha256Hex(src) != sha {
				err = errors.New("its content is not the sha256 its gzip header names")
			}
			return src, err
		})
	} else {
		var src []byte
		if src, err = readFS(fsys, file); err == nil {
			m, err = rt.Load(name, src)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", file, err)
	}
	return m, nil
}

// headerSum returns the SHA-256 that a .gz file's header comment names
// ("sha256:HEX"), or "".
func headerSum(fsys fs.FS, file string) string {
	if !strings.HasSuffix(file, ".gz") {
		return ""
	}
	f, err := fsys.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	zr, err := gzip.NewReader(f) // reads the header only
	if err != nil {
		return ""
	}
	sha, ok := strings.CutPrefix(zr.Comment, "sha256:")
	if _, err := hex.DecodeString(sha); !ok || err != nil || len(sha) != 64 {
		return ""
	}
	return sha
}

// readFS reads file whole, decompressing a .gz, at most
// limitedfile.Controller bytes either way.
func readFS(fsys fs.FS, file string) ([]byte, error) {
	f, err := fsys.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(file, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		r = zr
	}
	data, err := io.ReadAll(io.LimitReader(r, limitedfile.Controller+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limitedfile.Controller {
		return nil, errors.New("larger than " + limitedfile.Size(limitedfile.Controller) + ", the most Driftwood reads for a controller")
	}
	return data, nil
}
