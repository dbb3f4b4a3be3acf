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
			c.store(&goKernels, 0, 0, block, randF32(rng, block*kvHeads*hd), randF32(rng, block*kvHeads*hd))
			q := randF32(rng, 4*hd)
			a := randF32(rng, 4*stride)
			blk, off := c.at(1, 3) // kv head 1 from position 3
			m := 29
			ref := func(ks *kernelSet) (scores, out []float32) {
				scores, out = make([]float32, 4*stride), make([]float32, 4*hd)
				for h := range 4 {
					c.k[0].dot(ks, typ, scores[h*stride:h*stride+m], blk, off, q[h*hd:(h+1)*hd])
					c.v[0].axpy(ks, typ, out[h*hd:(h+1)*hd], blk, off, a[h*stride:h*stride+m])
				}
				return scores, out
			}
			wantScores, wantOut := ref(&goKernels)
			for _, ks := range kernelSets {
				if ks.has4(typ, hd) {
					scores, out := make([]float32, 4*stride), make([]float32, 4*hd)
					c.k[0].dot4(&ks, typ, scores, stride, blk, off, m, q)
					c.v[0].axpy4(&ks, typ, out, blk, off, m, a, stride)
					what := fmt.Sprintf("%s %s hd %d", ks.name, typ, hd)
					agree(t, what+" scores", scores, wantScores, hd)
					agree(t, what+" values", out, wantOut, m)
					tested++
				}
			}
		}
	}
	if tested == 0 && runtime.GOARCH == "amd64" {
		t.Error("no kernel set has four-head attention: nothing was checked")
	}
}

// TestAttentionSlices: a decode step's attention split into slices of
// positions and merged (flash-decoding) gives what one pass gives, in
// every cache type.
func TestAttentionSlices(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const heads, kvHeads, hd, n = 8, 2, 64, 1500
	for _, typ := range engine.KVTypes {
		c := newCache(nil, typ, 1, kvHeads, hd, n)
		c.reserve(n)
		c.store(&goKernels, 0, 0, n, randF32(rng, n*kvHeads*hd), randF32(rng, n*kvHeads*hd))
		c.n = n
		q := randF32(rng, heads*hd)
		job := func(slices int) []float32 {
			s := newScratch(heads*hd, 1)
			per := 4
			s.q, s.o, s.scores = make([]float32, per*hd), make([]float32, per*hd), make([]float32, per*n)
			s.top, s.sum = make([]float32, per), make([]float32, per)
			j := attnJob{ks: envKernels(t), c: c, p0: n - 1, n: 1, heads: heads, group: heads / kvHeads, per: per, tpi: 1, hd: hd,
				q: q, out: make([]float32, heads*hd), scr: []*scratch{s},
				part: make([]float32, heads*4*hd), partMax: make([]float32, heads*4), partSum: make([]float32, heads*4)}
			j.split(n, slices) // 2·workers items wanted: slices per kv head's group
			if j.slices != slices {
				t.Fatalf("%d workers: %d slices", slices, j.slices)
			}
			j.run(0, j.items(), 0)
			if j.slices > 1 {
				j.merge()
			}
			return j.out
		}
		agree(t, fmt.Sprint(typ, " in 2 slices"), job(2), job(1), n)
	}
}
