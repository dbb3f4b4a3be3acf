package controllers

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// Shipped holds the controllers built into the program, offered by every
// Registry made afterwards after the files in its folders: a file in a
// registry's folder overrides the shipped controller of the same name.
// Its files are NAME.wasm, NAME.wasm.gz (gzip-compressed) or NAME.wat at
// the root, one per name.
//
// # Notes
//
// It is nil unless the program imports controllers/shipped (which sets it
// to the shipped regex, json, choice, ban and maxwords in its init), or
// sets it itself, before making a Registry. Without it a registry offers
// only the files in its folders.
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
// # Errors
//
// A file that cannot be read, is larger than limitedfile.Controller
// (compressed or not), is not valid gzip, or fails as in Load gives an
// error naming the file.
func (rt *Runtime) LoadFS(fsys fs.FS, file string) (*Module, error) {
	name, ok := shippedName(file)
	if !ok {
		return nil, fmt.Errorf("controller %s: not a .wasm, .wasm.gz or .wat file", file)
	}
	src, err := readFS(fsys, file)
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", file, err)
	}
	m, err := rt.Load(name, src)
	if err != nil {
		return nil, fmt.Errorf("controller %s: %w", file, err)
	}
	return m, nil
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
