package cpu

import (
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestInt8x2 checks the second pass over the rounding error
// (Activations "int8x2") on every weight form with int8 kernels (MLX q4
// in nibble order, q8, GGUF's 32-blocks and k-quants), on the batch path
// (a prompt) and the single-input one (a token at a time): its logits
// must be at least 20 times closer to the float reference's than int8's
// (about 60–100 times, here). A residual laid out in the wrong order, or
// added twice, lands as far off as int8 or farther.
func TestInt8x2(t *testing.T) {
	if !kernelSets[len(kernelSets)-1].int8() {
		t.Skip("this CPU runs no int8 kernel set")
	}
	prompt := []int32{500, 38, 364, 273, 271, 77, 299, 0, 343, 259, 440, 261, 412}
	for _, name := range []string{"tiny-mlx-q4", "tiny-mlx-q4-g64", "tiny-mlx-q8", "tiny-mixed.gguf", "tiny-kquants.gguf"} {
		m, err := engine.LoadModel(golden.ModelDir(name))
		if err != nil {
			t.Fatal(err)
		}
		run := func(opt Options) []float32 {
			opt.Threads = 2
			b, err := New(m, opt)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			vocab := m.Config.VocabSize
			ids := make([]int32, len(prompt))
			for i, id := range prompt {
				ids[i] = id % int32(vocab)
			}
			var all []float32
			batch, _ := b.NewCache(64)
			one, _ := b.NewCache(64)
			defer batch.Close()
			defer one.Close()
			logits := make([]float32, vocab)
			if err := b.Forward(batch, ids, logits); err != nil {
				t.Fatal(err)
			}
			all = append(all, logits...)
			for _, id := range ids {
				if err := b.Forward(one, []int32{id}, logits); err != nil {
					t.Fatal(err)
				}
				all = append(all, logits...)
			}
			return all
		}
		float := run(Options{Kernels: "float"})
		d8 := maxDiff(run(Options{Activations: ActivationsInt8}), float)
		d2 := maxDiff(run(Options{Activations: ActivationsInt8x2}), float)
		t.Logf("%s: logits off the float path's by %.2g with int8, %.2g with int8x2", name, d8, d2)
		if d2 > d8/20 {
			t.Errorf("%s: int8x2's logits are %.2g off the float path's (int8's %.2g)", name, d2, d8)
		}
		m.Close()
	}
	if _, err := New(nil, Options{Activations: "int4"}); err == nil {
		t.Error("Activations int4 was taken")
	}
}
