package sessions

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestRestoreInPlace: a session's whole blocks are used in place by the
// CPU cache that imports it (engine.KVState.Hold), in every KV type.
// Decoding after the restore gives the logits the original cache gives;
// the snapshot may be closed first (the cache holds the mapping);
// writing over restored positions (a truncation, then new tokens)
// changes the cache alone, never the file, whose checksum still holds;
// and a later import of another state replaces the blocks in place.
func TestRestoreInPlace(t *testing.T) {
	m, err := engine.LoadModel(golden.ModelDir("tiny-hd32-f32"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	r := rand.New(rand.NewPCG(29, 1))
	ids := make([]int32, 300) // one whole block of 256 and 44 more
	for i := range ids {
		ids[i] = int32(r.IntN(m.Config.VocabSize))
	}
	more := []int32{5, 17, 99, 3}
	for _, typ := range engine.KVTypes {
		t.Run(string(typ), func(t *testing.T) {
			b, err := cpu.New(m, cpu.Options{Threads: 2, KVType: typ})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			logits := func(c engine.Cache, toks []int32) []float32 {
				out := make([]float32, m.Config.VocabSize)
				if err := b.Forward(c, toks, out); err != nil {
					t.Fatal(err)
				}
				return out
			}
			orig, _ := b.NewCache(512)
			logits(orig, ids)
			kv, err := orig.Export()
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "s.safetensors")
			if err := Save(path, Meta{Model: "tiny", Tokens: ids}, kv); err != nil {
				t.Fatal(err)
			}
			snap, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			restored, _ := b.NewCache(512)
			if err := restored.Import(snap.KV); err != nil {
				t.Fatal(err)
			}
			snap.Close() // the cache holds the mapping on
			if got, want := logits(restored, more), logits(orig, more); !slices.Equal(got, want) {
				t.Fatalf("after the restore the next logits differ")
			}
			// Over restored positions: the cache changes, the file not.
			restored.Truncate(100)
			orig.Truncate(100)
			if got, want := logits(restored, more), logits(orig, more); !slices.Equal(got, want) {
				t.Fatalf("after writing over restored positions the logits differ")
			}
			again, err := Open(path) // its checksum covers every byte of the tensors
			if err != nil {
				t.Fatalf("the file changed under the cache: %v", err)
			}
			// Another import replaces the blocks: a state of another
			// type (converted, copied) and this one again (in place).
			for _, s := range []*engine.KVState{kv.Convert(engine.KVF32), again.KV} {
				if err := restored.Import(s); err != nil {
					t.Fatal(err)
				}
				fresh, _ := b.NewCache(512)
				if err := fresh.Import(kv); err != nil {
					t.Fatal(err)
				}
				if got, want := logits(restored, more), logits(fresh, more); !slices.Equal(got, want) {
					t.Errorf("import over an earlier one: the logits differ")
				}
				fresh.Close()
			}
			again.Close()
			restored.Close()
			orig.Close()
		})
	}
}
