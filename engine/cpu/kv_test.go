package cpu

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

// TestAttention4 checks the four-head attention kernels of every set that
// has them against the one-head portable ones, on every cache type that
// has them, over spans that start mid-block and end short of it.
func TestAttention4(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	tested := 0
	for _, typ := range []engine.KVType{engine.KVF16, engine.KVBF16, engine.KVQ8} {
		for _, hd := range []int{32, 64, 128} {
			const kvHeads, block, stride = 2, 40, 50
			c := newCache(nil, typ, 1, kvHeads, hd, block)
			c.reserve(block)
			c.store(0, 0, block, randF32(rng, block*kvHeads*hd), randF32(rng, block*kvHeads*hd))
			q := randF32(rng, 4*hd)
			a := randF32(rng, 4*stride)
			blk, off := c.at(1, 3) // kv head 1 from position 3
			m := 29
			ref := func(ks kernelSet) (scores, out []float32) {
				saved := kern
				kern = ks
				defer func() { kern = saved }()
				scores, out = make([]float32, 4*stride), make([]float32, 4*hd)
				for h := range 4 {
					c.k[0].dot(typ, scores[h*stride:h*stride+m], blk, off, q[h*hd:(h+1)*hd])
					c.v[0].axpy(typ, out[h*hd:(h+1)*hd], blk, off, a[h*stride:h*stride+m])
				}
				return scores, out
			}
			wantScores, wantOut := ref(goKernels)
			for _, ks := range kernelSets {
				saved := kern
				kern = ks
				if has4(typ, hd) {
					scores, out := make([]float32, 4*stride), make([]float32, 4*hd)
					c.k[0].dot4(typ, scores, stride, blk, off, m, q)
					c.v[0].axpy4(typ, out, blk, off, m, a, stride)
					what := fmt.Sprintf("%s %s hd %d", ks.name, typ, hd)
					agree(t, what+" scores", scores, wantScores, hd)
					agree(t, what+" values", out, wantOut, m)
					tested++
				}
				kern = saved
			}
		}
	}
	if tested == 0 && runtime.GOARCH == "amd64" {
		t.Error("no kernel set has four-head attention: nothing was checked")
	}
}
