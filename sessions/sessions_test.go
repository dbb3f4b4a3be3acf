package sessions

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// sample builds a snapshot of n positions for a model of the tiny shape.
func sample(n int, fill byte) (Meta, *engine.KVState) {
	kv := &engine.KVState{Len: n, KVHeads: 2, HeadDim: 16, DType: safetensors.F32}
	for l := 0; l < 3; l++ {
		k, v := make([]byte, 2*n*16*4), make([]byte, 2*n*16*4)
		for i := range k {
			k[i], v[i] = fill+byte(i*7+l), fill+byte(i*3+l)
		}
		kv.K, kv.V = append(kv.K, k), append(kv.V, v)
	}
	tokens := make([]int32, n)
	for i := range tokens {
		tokens[i] = int32(i)
	}
	meta := Meta{Created: time.Unix(1, 0).UTC(), Updated: time.Unix(2, 0).UTC(), Model: "tiny", ModelFingerprint: "fp", TokenizerFingerprint: "tok",
		Tokens: tokens, Messages: []chat.Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}},
		Sampler: SamplingOf(engine.DefaultSamplerConfig()), Controller: &Controller{Name: "regex", Arg: "a+", SHA256: "00", KV: map[string][]byte{"k": []byte("v")}}}
	return meta, kv
}

// saveAs claims session name, saves it and lets it go.
func saveAs(s Store, name string, meta Meta, kv *engine.KVState) error {
	c, err := s.Claim(name)
	if err != nil {
		return err
	}
	defer c.Release()
	return c.Save(meta, kv)
}

func TestRoundTrip(t *testing.T) {
	store := Store{Dir: filepath.Join(t.TempDir(), "sessions")}
	meta, kv := sample(5, 1)
	if err := saveAs(store, "chat-1", meta, kv); err != nil {
		t.Fatal(err)
	}
	snap, err := store.Open("chat-1")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if !slices.Equal(snap.Meta.Tokens, meta.Tokens) || snap.Meta.Messages[1].Content != "hello" || string(snap.Meta.Controller.KV["k"]) != "v" {
		t.Errorf("meta lost: %+v", snap.Meta)
	}
	for l := range kv.K {
		if !slices.Equal(snap.KV.K[l], kv.K[l]) || !slices.Equal(snap.KV.V[l], kv.V[l]) {
			t.Errorf("layer %d tensors differ", l)
		}
	}
	list, err := store.List()
	if err != nil || len(list) != 1 || list[0].Name != "chat-1" || list[0].Turns != 1 || list[0].Tokens != 5 {
		t.Errorf("list = %+v, %v", list, err)
	}
	// A conversation is its owner's alone.
	for path, want := range map[string]os.FileMode{store.Dir: 0o700 | os.ModeDir, snap.Path: 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode(), err, want)
		}
	}
}

func TestCorruptFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.safetensors")
	meta, kv := sample(6, 2)
	if err := Save(path, meta, kv); err != nil {
		t.Fatal(err)
	}
	good, _ := os.ReadFile(path)
	hlen := int(good[0]) | int(good[1])<<8
	try := func(reason string, data []byte, want string) {
		t.Helper()
		p := filepath.Join(dir, "bad.safetensors")
		os.WriteFile(p, data, 0o644)
		s, err := Open(p)
		if err == nil {
			s.Close()
			t.Errorf("%s: opened", reason)
			return
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err %q, want the path and %q", reason, err, want)
		}
	}
	for _, cut := range []int{0, 5, 8, 8 + hlen/2, 8 + hlen, len(good) - 1} {
		try("truncated at "+strconv.Itoa(cut), good[:cut], "")
	}
	flip := func(at int) []byte {
		b := slices.Clone(good)
		b[at] ^= 0x5a
		return b
	}
	try("a flipped byte in the data", flip(len(good)-10), "corrupt")
	try("a flipped byte in the header", flip(8+hlen/2), "")
	newer := slices.Clone(good)
	copy(newer[8:8+hlen], strings.Replace(string(newer[8:8+hlen]), `\"version\":2`, `\"version\":9`, 1))
	try("a newer format version", newer, "newer than this Driftwood's")
	for _, n := range []int{-1, 3} {
		meta.OutOfView = n // of two messages
		p := filepath.Join(dir, "view.safetensors")
		if err := Save(p, meta, kv); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(p)
		try("out of view "+strconv.Itoa(n), raw, "out of the model's view")
	}
	meta.OutOfView = 0
	for _, c := range []struct {
		imported, outOfView int
		first               string
	}{{-1, 0, "user"}, {len(meta.Tokens) + 1, 0, "user"}, {2, 1, "user"}, {2, 0, "assistant"}} {
		m := meta
		m.Imported, m.OutOfView = c.imported, c.outOfView
		m.Messages = slices.Clone(m.Messages)
		m.Messages[0].Role = c.first
		p := filepath.Join(dir, "imported.safetensors")
		if err := Save(p, m, kv); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(p)
		try(fmt.Sprintf("%d imported, %d out of view, first %s", c.imported, c.outOfView, c.first), raw, "were imported")
	}
	if _, err := Open(filepath.Join(dir, "missing.safetensors")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestWrongModelIsRefused(t *testing.T) {
	models := map[string]*engine.Model{}
	for _, name := range []string{"tiny-mlx-q4", "tiny-mlx-q4-g64", "tiny-f32"} {
		m, err := engine.LoadModel(golden.ModelDir(name))
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		models[name] = m
	}
	path := filepath.Join(t.TempDir(), "s.safetensors")
	meta, kv := sample(3, 0)
	meta.ModelFingerprint, meta.Model = models["tiny-mlx-q4"].Fingerprint, "tiny-mlx-q4"
	Save(path, meta, kv)
	snap, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := snap.CheckModel(models["tiny-mlx-q4"], "tok", 512); err != nil {
		t.Errorf("own model refused: %v", err)
	}
	for _, other := range []string{"tiny-mlx-q4-g64", "tiny-f32"} {
		err := snap.CheckModel(models[other], "tok", 512)
		if err == nil || !strings.Contains(err.Error(), "was made with tiny-mlx-q4") {
			t.Errorf("%s: err = %v", other, err)
		}
	}
	if err := snap.CheckModel(models["tiny-mlx-q4"], "other", 512); err == nil || !strings.Contains(err.Error(), "tokenizer") {
		t.Errorf("other tokenizer: %v", err)
	}
	if err := snap.CheckModel(models["tiny-mlx-q4"], "tok", 2); err == nil {
		t.Error("a window smaller than the snapshot was accepted")
	}
}

// failingWriter fails after n bytes, as a full disk does.
type failingWriter struct {
	w io.Writer
	n int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		f.w.Write(p[:f.n])
		return f.n, syscall.ENOSPC
	}
	f.n -= len(p)
	return f.w.Write(p)
}

func TestFullDiskKeepsThePreviousSnapshot(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	meta, kv := sample(4, 1)
	if err := saveAs(store, "s", meta, kv); err != nil {
		t.Fatal(err)
	}
	store.wrap = func(w io.Writer) io.Writer { return &failingWriter{w: w, n: 100} }
	meta2, kv2 := sample(8, 9)
	err := saveAs(store, "s", meta2, kv2)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "previous copy") {
		t.Fatalf("err = %v, want ENOSPC", err)
	}
	snap, err := Store{Dir: store.Dir}.Open("s")
	if err != nil {
		t.Fatalf("the previous snapshot is damaged: %v", err)
	}
	defer snap.Close()
	if snap.Meta.KV.Len != 4 {
		t.Errorf("snapshot holds %d positions, want the previous 4", snap.Meta.KV.Len)
	}
	if left, _ := filepath.Glob(filepath.Join(store.Dir, ".s.*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestKilledDuringSave kills a child process in the middle of saving
// large snapshots over an existing one: the file is always a whole,
// valid snapshot, old or new.
func TestKilledDuringSave(t *testing.T) {
	if dir := os.Getenv("DRIFTWOOD_SAVE_LOOP"); dir != "" {
		for i := 0; ; i++ {
			meta, kv := sample(4096, byte(i))
			saveAs(Store{Dir: dir}, "s", meta, kv)
		}
	}
	dir := t.TempDir()
	meta, kv := sample(16, 1)
	if err := saveAs(Store{Dir: dir}, "s", meta, kv); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 4; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledDuringSave$")
		cmd.Env = append(os.Environ(), "DRIFTWOOD_SAVE_LOOP="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(150+97*round) * time.Millisecond)
		cmd.Process.Kill()
		cmd.Wait()
		snap, err := Store{Dir: dir}.Open("s")
		if err != nil {
			t.Fatalf("round %d: snapshot torn by a kill: %v", round, err)
		}
		snap.Close()
	}
	// Leftover temporary files are ignored by List and cleaned by the
	// next save.
	if list, _ := (Store{Dir: dir}).List(); len(list) != 1 {
		t.Errorf("list = %+v", list)
	}
	saveAs(Store{Dir: dir}, "s", meta, kv)
	if left, _ := filepath.Glob(filepath.Join(dir, ".s.*")); len(left) != 0 {
		t.Errorf("stale temporary files not cleaned: %v", left)
	}
}

func TestStoreNames(t *testing.T) {
	store := Store{Dir: t.TempDir()}
	for _, bad := range []string{"", "../x", "a/b", ".hidden", "a..b", strings.Repeat("x", 65), "sp ace"} {
		if _, err := store.Path(bad); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	meta, kv := sample(2, 0)
	saveAs(store, "a", meta, kv)
	if err := store.Rename("a", "b"); err != nil {
		t.Fatal(err)
	}
	saveAs(store, "c", meta, kv)
	if err := store.Rename("b", "c"); err == nil {
		t.Error("rename over an existing session")
	}
	if name, err := store.Latest(); err != nil || name != "b" && name != "c" {
		t.Errorf("latest = %q, %v", name, err)
	}
	if err := store.Remove("b"); err != nil {
		t.Fatal(err)
	}
	if err := store.Remove("b"); err == nil || !strings.Contains(err.Error(), `no session "b"`) {
		t.Errorf("removing twice: %v", err)
	}
}

func FuzzOpen(f *testing.F) {
	dir := f.TempDir()
	meta, kv := sample(2, 0)
	seeds := []string{"testdata/v1.safetensors"}
	for i, kv := range []*engine.KVState{kv, floats(2, 32).Convert(engine.KVF16), floats(2, 32).Convert(engine.KVQ8)} {
		path := filepath.Join(dir, "seed"+strconv.Itoa(i)+".safetensors")
		Save(path, meta, kv)
		seeds = append(seeds, path)
	}
	fixtures, _ := filepath.Glob("testdata/mlxlm-*.safetensors")
	for _, path := range append(seeds, fixtures...) {
		seed, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed)
	}
	// What was read holds together: as many tokens as positions, and
	// every tensor the size the state's shape says.
	consistent := func(t *testing.T, kv *engine.KVState) {
		cfg := &engine.Config{NumHiddenLayers: len(kv.K), NumKeyValueHeads: kv.KVHeads, HeadDim: kv.HeadDim}
		if err := cfg.ValidateKV(kv, kv.Len); err != nil {
			t.Fatalf("accepted an inconsistent state: %v", err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "f.safetensors")
		os.WriteFile(p, data, 0o644)
		if s, err := Open(p); err == nil {
			if len(s.Meta.Tokens) != s.KV.Len || len(s.KV.K) != s.Meta.KV.Layers {
				t.Fatalf("accepted an inconsistent snapshot: %+v", s.Meta.KV)
			}
			consistent(t, s.KV)
			s.Close()
		}
		if pc, err := OpenPromptCache(p); err == nil {
			consistent(t, pc.KV)
			pc.Close()
		}
	})
}
