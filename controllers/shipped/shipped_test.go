package shipped

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/controllers"
	"github.com/driftwoodlabs/driftwood/controllers/internal/wasmbuild"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestEmbeddedMatchSource is CI's proof that the committed modules are the
// build of their source: it rebuilds every controller of
// controllers/examples with the toolchain go.mod pins and compares the
// bytes with the files here.
func TestEmbeddedMatchSource(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the shipped controllers are not rebuilt")
	}
	pin, err := wasmbuild.Toolchain(".")
	if err != nil {
		t.Fatal(err)
	}
	if runtime.Version() != pin {
		// Building with the pinned one would download it, and another
		// toolchain builds other bytes.
		t.Skipf("the shipped controllers are built by %s (go.mod's toolchain line) and this is %s: run GOTOOLCHAIN=%s go test ./controllers/shipped to check them", pin, runtime.Version(), pin)
	}
	out := t.TempDir()
	start := time.Now()
	names, err := wasmbuild.Shipped(filepath.Join("..", "examples"), out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rebuilt %v in %.1fs", names, time.Since(start).Seconds())
	committed, err := filepath.Glob("*.wasm.gz")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range names {
		want = append(want, n+".wasm.gz")
	}
	if !slices.Equal(committed, want) {
		t.Errorf("committed %v, but the source builds %v: run go generate ./controllers/... and commit controllers/shipped", committed, want)
	}
	for _, file := range want {
		built, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile(file)
		if err != nil {
			continue // reported above
		}
		if !bytes.Equal(have, built) {
			t.Errorf("%s is not what its source builds (%d bytes committed, %d built; %s): run go generate ./controllers/... and commit controllers/shipped", file, len(have), len(built), compareWasm(have, built))
		}
	}
}

// compareWasm says whether two compressed modules differ in their Wasm
// bytes or only in their compression.
func compareWasm(a, b []byte) string {
	unzip := func(gz []byte) []byte {
		zr, err := gzip.NewReader(bytes.NewReader(gz))
		if err != nil {
			return nil
		}
		data, _ := io.ReadAll(zr)
		return data
	}
	if wa, wb := unzip(a), unzip(b); wa != nil && bytes.Equal(wa, wb) {
		return "the same Wasm, compressed differently"
	}
	return "the Wasm differs"
}

// TestImportShips: importing the package gives every host the five
// shipped controllers, by name, with nothing on disk, and each compiles.
func TestImportShips(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join(golden.ModelDir("tiny-f32"), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := controllers.NewHost(tok, 512, controllers.HostOptions{Dirs: []string{filepath.Join(t.TempDir(), "none")}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var names []string
	for _, e := range h.Controllers() {
		if !e.Shipped || !e.Used || e.Path != "" {
			t.Errorf("entry %+v: want a used shipped one", e)
		}
		names = append(names, e.Name)
	}
	if want := []string{"ban", "choice", "json", "maxwords", "regex"}; !slices.Equal(names, want) {
		t.Fatalf("shipped %v, want %v", names, want)
	}
	mod, err := h.Switch("maxwords", "8")
	if err != nil {
		t.Fatal(err)
	}
	if mod.Name != "maxwords" || len(mod.SHA256) != 64 {
		t.Errorf("module %q %q", mod.Name, mod.SHA256)
	}
}
