package wasmbuild

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestToolchain(t *testing.T) {
	got, err := Toolchain(".")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^go1\.\d+\.\d+$`).MatchString(got) {
		t.Errorf("the repository's go.mod pins %q: want an exact release, e.g. go1.26.8", got)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n\ngo 1.26\n"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	if _, err := Toolchain(filepath.Join(dir, "sub")); err == nil || !strings.Contains(err.Error(), "no toolchain line") {
		t.Errorf("go.mod without a toolchain line: %v", err)
	}
}

// TestCompressIsReproducible: equal input, equal bytes, and they
// decompress to the input; the header names the input's hash.
func TestCompressIsReproducible(t *testing.T) {
	data := bytes.Repeat([]byte("\x00asm controller "), 1000)
	a, err := Compress(data)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Compress(data)
	if !bytes.Equal(a, b) {
		t.Error("two compressions of the same bytes differ")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	back, err := io.ReadAll(zr)
	if err != nil || !bytes.Equal(back, data) {
		t.Errorf("decompressed %d bytes (%v), want the %d given", len(back), err, len(data))
	}
	sum := sha256.Sum256(data)
	if zr.Name != "" || !zr.ModTime.IsZero() || zr.Comment != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("header carries name %q, time %v, comment %q: want only the content's sha256", zr.Name, zr.ModTime, zr.Comment)
	}
}
