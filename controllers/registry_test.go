package controllers

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/bytecodealliance/wasmtime-go/v39"
)

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	return gzipNamed(t, data, "")
}

// gzipNamed compresses data with comment in the header.
func gzipNamed(t *testing.T, data []byte, comment string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Comment = comment
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestShippedAndOverride: a registry offers the shipped controllers after
// the files of its folders; a file of the same name overrides the shipped
// one while it is there, and the shipped one is found again once it is
// removed.
func TestShippedAndOverride(t *testing.T) {
	h := newHarness(t)
	wasm, err := wasmtime.Wat2Wasm(allowOnly(4))
	if err != nil {
		t.Fatal(err)
	}
	shipped := fstest.MapFS{
		"ctl.wat":     {Data: []byte(allowOnly(3))},
		"gz.wasm.gz":  {Data: gzipped(t, wasm)},
		"README.md":   {Data: []byte("not a controller")},
		"sub/x.wasm":  {Data: wasm},
		"sub/y.wat":   {Data: []byte(allowOnly(5))},
		"other.wasm~": {Data: wasm},
	}
	dir := t.TempDir()
	override := filepath.Join(dir, "ctl.wat")
	if err := os.WriteFile(override, []byte(allowOnly(7)), 0o644); err != nil {
		t.Fatal(err)
	}
	reg, err := newRegistry(h.rt, shipped, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	want := []Entry{
		{Name: "ctl", Path: override, Used: true},
		{Name: "ctl", Shipped: true},
		{Name: "gz", Shipped: true, Used: true},
	}
	if got := reg.All(); !slices.Equal(got, want) {
		t.Errorf("All() = %+v\nwant %+v", got, want)
	}
	if got := reg.List(); !slices.Equal(got, []Entry{want[0], want[2]}) {
		t.Errorf("List() = %+v, want the used ones", got)
	}
	replyOf := func(name string) []int32 {
		t.Helper()
		mod, err := reg.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		d := h.driver(reg)
		defer d.Close()
		d.Use(mod, "")
		reply, _, _ := h.reply(t, d, nil, 3, 1, nil)
		return reply
	}
	if got := replyOf("ctl"); !slices.Equal(got, []int32{7, 7, 7}) {
		t.Errorf("ctl with a file in the folder: %v, want the file's 7s", got)
	}
	if err := os.Remove(override); err != nil {
		t.Fatal(err)
	}
	if got := replyOf("ctl"); !slices.Equal(got, []int32{3, 3, 3}) {
		t.Errorf("ctl without the file: %v, want the shipped 3s", got)
	}
	if got := replyOf("gz"); !slices.Equal(got, []int32{4, 4, 4}) {
		t.Errorf("gz (compressed): %v, want 4s", got)
	}
	// A compressed module is known by the hash of its Wasm bytes, as the
	// same module in a file is (a session names its controller's hash).
	mod, err := reg.Get("gz")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	if mod.SHA256 != hex.EncodeToString(sum[:]) || mod.Path != "" || mod.Name != "gz" {
		t.Errorf("shipped module %q %q %q, want name gz, no path, the Wasm's hash", mod.Name, mod.Path, mod.SHA256)
	}
	if again, _ := reg.Get("gz"); again != mod {
		t.Error("a shipped controller is compiled again at each Get")
	}
	if _, err := reg.Get("none"); err == nil || !strings.Contains(err.Error(), "(have: ctl, gz)") {
		t.Errorf("unknown name: %v", err)
	}
}

// TestNoControllers: without shipped controllers and files, the error
// says where it looked and that none are shipped.
func TestNoControllers(t *testing.T) {
	rt := newWasmRuntime(defaultLimits(), "")
	defer rt.Close()
	dir := filepath.Join(t.TempDir(), "missing")
	reg, err := newRegistry(rt, nil, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if len(reg.All()) != 0 {
		t.Errorf("All() = %v", reg.All())
	}
	_, err = reg.Get("regex")
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "none shipped") {
		t.Errorf("error %v: want the folder and that none are shipped", err)
	}
}

func TestLoadFSErrors(t *testing.T) {
	rt := newWasmRuntime(defaultLimits(), "")
	defer rt.Close()
	fsys := fstest.MapFS{
		"bad.wasm.gz": {Data: []byte("\x00asm not gzip")},
		"cut.wasm.gz": {Data: gzipped(t, []byte("\x00asm\x01\x00\x00\x00"))[:20]},
		"x.txt":       {Data: []byte("x")},
	}
	for _, c := range []struct{ file, want string }{
		{"bad.wasm.gz", "bad.wasm.gz: gzip: invalid header"},
		{"cut.wasm.gz", "cut.wasm.gz: unexpected EOF"},
		{"x.txt", "not a .wasm, .wasm.gz or .wat file"},
		{"missing.wasm", "missing.wasm: open missing.wasm: file does not exist"},
	} {
		if _, err := rt.LoadFS(fsys, c.file); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.file, err, c.want)
		}
	}
}

// TestBuildErrors: Build without sources says where it looked and that
// the shipped controllers need no build; a failed build names the folder
// and gives the go command's output; .wat files are copied.
func TestBuildErrors(t *testing.T) {
	out := t.TempDir()
	_, err := Build(filepath.Join(t.TempDir(), "nowhere"), out)
	if err == nil || !strings.Contains(err.Error(), "nowhere") || !strings.Contains(err.Error(), "need no build") {
		t.Errorf("no sources: %v", err)
	}
	src := t.TempDir()
	os.MkdirAll(filepath.Join(src, "a-wat"), 0o755)
	os.WriteFile(filepath.Join(src, "a-wat", "tiny.wat"), []byte(allowOnly(3)), 0o644)
	os.MkdirAll(filepath.Join(src, "broken"), 0o755)
	os.WriteFile(filepath.Join(src, "broken", "go.mod"), []byte("module broken\n\ngo 1.26\n"), 0o644)
	os.WriteFile(filepath.Join(src, "broken", "main.go"), []byte("package main\nfunc main() {"), 0o644)
	written, err := Build(src, out)
	if err == nil || !strings.Contains(err.Error(), "building "+filepath.Join(src, "broken")) || !strings.Contains(err.Error(), "main.go:2") {
		t.Errorf("broken source: %v", err)
	}
	if want := []string{filepath.Join(out, "tiny.wat")}; !slices.Equal(written, want) {
		t.Errorf("written %v, want %v", written, want)
	}
	if data, err := os.ReadFile(filepath.Join(out, "tiny.wat")); err != nil || string(data) != allowOnly(3) {
		t.Errorf("tiny.wat: %v", err)
	}
}

// TestLoadFSHeaderSum: a .wasm.gz whose header names its hash is not
// decompressed when the disk cache holds that module (a file cut short
// still loads), and is checked against the hash when it does not.
func TestLoadFSHeaderSum(t *testing.T) {
	wasm, err := wasmtime.Wat2Wasm(allowOnly(4))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(wasm)
	named := "sha256:" + hex.EncodeToString(sum[:])
	other := sha256.Sum256([]byte("another module"))
	whole := gzipNamed(t, wasm, named)
	fsys := fstest.MapFS{
		"whole.wasm.gz": {Data: whole},
		"cut.wasm.gz":   {Data: whole[:len(whole)/2]},
		"wrong.wasm.gz": {Data: gzipNamed(t, wasm, "sha256:"+hex.EncodeToString(other[:]))},
		"junk.wasm.gz":  {Data: gzipNamed(t, wasm, "sha256:not hex")},
	}
	cache := t.TempDir()
	cold := newWasmRuntime(defaultLimits(), cache)
	defer cold.Close()
	if _, err := cold.LoadFS(fsys, "cut.wasm.gz"); err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("cut short, not in the cache: %v, want the gzip error", err)
	}
	if _, err := cold.LoadFS(fsys, "wrong.wasm.gz"); err == nil || !strings.Contains(err.Error(), "wrong.wasm.gz: its content is not the sha256 its gzip header names") {
		t.Errorf("wrong hash, not in the cache: %v", err)
	}
	m, err := cold.LoadFS(fsys, "junk.wasm.gz") // no usable hash: decompressed and hashed
	if err != nil || m.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("a comment that is no hash: %v", err)
	}
	warm := newWasmRuntime(defaultLimits(), cache) // the module is in the cache now
	defer warm.Close()
	m, err = warm.LoadFS(fsys, "cut.wasm.gz")
	if err != nil || m.SHA256 != hex.EncodeToString(sum[:]) || m.Name != "cut" {
		t.Errorf("cut short, in the cache: %v, want the cached module", err)
	}
}
