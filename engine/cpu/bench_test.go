package cpu

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

// benchModel opens the model folder named by DRIFTWOOD_BENCH_MODEL (for
// example one made by `driftwood dev gen-model --shape llama-3.2-1b`), or
// skips.
func benchModel(b *testing.B) (*Backend, *engine.Model) {
	dir := os.Getenv("DRIFTWOOD_BENCH_MODEL")
	if dir == "" {
		b.Skip("DRIFTWOOD_BENCH_MODEL is not set")
	}
	m, err := engine.LoadModel(dir)
	if err != nil {
		b.Fatal(err)
	}
	be, err := New(m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Close(); m.Close() })
	return be, m
}

func benchPrompt() []int32 {
	prompt := make([]int32, 128)
	for i := range prompt {
		prompt[i] = int32(i * 37)
	}
	return prompt
}

// BenchmarkDecode times one decode step after a 128-token prompt.
func BenchmarkDecode(b *testing.B) {
	be, m := benchModel(b)
	c, err := be.NewCache(512)
	if err != nil {
		b.Fatal(err)
	}
	logits := make([]float32, m.Config.VocabSize)
	prompt := benchPrompt()
	if err := be.Forward(c, prompt, logits); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		c.Truncate(len(prompt))
		if err := be.Forward(c, []int32{9}, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkPrefill times a 128-token prompt.
func BenchmarkPrefill(b *testing.B) {
	be, m := benchModel(b)
	c, err := be.NewCache(512)
	if err != nil {
		b.Fatal(err)
	}
	logits := make([]float32, m.Config.VocabSize)
	prompt := benchPrompt()
	b.ResetTimer()
	for range b.N {
		c.Truncate(0)
		if err := be.Forward(c, prompt, logits); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(prompt))/b.Elapsed().Seconds(), "tok/s")
}

// BenchmarkGemvQ4 times the decode kernel of every kernel set on a
// 64×2048 q4 block (group 64, bf16 scales) that stays in cache: the
// kernels' arithmetic, without memory.
func BenchmarkGemvQ4(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows, cols, group := 64, 2048, 64
	w := randU32(rng, rows*cols/8)
	scales := halfVec{u16: randHalf(rng, rows*cols/group, false)}
	biases := halfVec{u16: randHalf(rng, rows*cols/group, false)}
	x, xsum, out := randF32(rng, cols), randF32(rng, cols/group), make([]float32, rows)
	xq, dx, f := make([]int8, cols), make([]float32, cols/int8Block), make([]float32, cols/int8Block+16)
	xsumI8 := make([]float32, cols/int8Block)
	for _, ks := range kernelSets {
		b.Run(ks.name, func(b *testing.B) {
			b.SetBytes(int64(4 * len(w)))
			if ks.gemvQ4I8 == nil {
				for range b.N {
					ks.gemvQ4(out, w, scales, biases, x, xsum, group)
				}
				return
			}
			for range b.N {
				ks.quantI8(xq, dx, xsumI8, x, i8Q4Blocks)
				ks.gemvQ4I8(out, w, scales, biases, xq, dx, xsumI8, f, group)
			}
		})
	}
}

// BenchmarkGemvQ4Rows times the default set's q4 decode kernel alone
// (group 64, bf16 scales, 2048 columns, the input quantised once) on 512
// rows, which stay in L2 ("l2": the kernel's arithmetic), and on 393,216
// rows, 432 MiB that stream from memory ("memory": with its prefetches).
func BenchmarkGemvQ4Rows(b *testing.B) {
	for _, c := range []struct {
		name string
		rows int
	}{{"l2", 512}, {"memory", 393216}} {
		b.Run(c.name, func(b *testing.B) {
			ks := envKernels(b)
			if !ks.int8() {
				b.Skip("the default kernel set has no int8 kernels")
			}
			rng := rand.New(rand.NewPCG(1, 2))
			const cols, group = 2048, 64
			w := randU32(rng, c.rows*cols/8)
			scales := halfVec{u16: randHalf(rng, c.rows*cols/group, false)}
			biases := halfVec{u16: randHalf(rng, c.rows*cols/group, false)}
			x, out := randF32(rng, cols), make([]float32, c.rows)
			xq, dx, xsum, f := make([]int8, cols), make([]float32, cols/int8Block), make([]float32, cols/int8Block), make([]float32, cols/int8Block+16)
			ks.quantI8(xq, dx, xsum, x, i8Q4Blocks)
			b.SetBytes(int64(4*len(w) + 4*c.rows*cols/group))
			b.ResetTimer()
			for range b.N {
				ks.gemvQ4I8(out, w, scales, biases, xq, dx, xsum, f, group)
			}
		})
	}
}

// BenchmarkGemm4 times the prefill kernel of every kernel set: four rows
// of 1024 weights against 64 inputs.
func BenchmarkGemm4(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	k, np := 1024, 64
	w, xT := randF32(rng, 4*k), randF32(rng, k*np)
	out := make([]float32, 4*np)
	for _, ks := range kernelSets {
		b.Run(ks.name, func(b *testing.B) {
			for range b.N {
				ks.gemm4(out, 4, np, w, k, xT, np)
			}
			b.ReportMetric(float64(b.N)*float64(4*k*np)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

// BenchmarkAffineMatmul times one MLX affine matmul (group 64, bf16
// scales) with every kernel set, as the model calls it (the input
// prepared, then all rows): decode, one input times 8192×2048 (a 1B MLP
// matrix, larger than L2), and prefill, 64 inputs times 2048×2048.
func BenchmarkAffineMatmul(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, bits := range []int{4, 8} {
		for _, c := range []struct {
			name          string
			rows, cols, n int
		}{{"decode", 8192, 2048, 1}, {"prefill", 2048, 2048, 64}} {
			const group = 64
			m := &affineMatrix{dense: dense{rows: c.rows, cols: c.cols}, bits: bits, group: group,
				packed: randU32(rng, c.rows*c.cols*bits/32),
				scales: halfVec{u16: randHalf(rng, c.rows*c.cols/group, false)},
				biases: halfVec{u16: randHalf(rng, c.rows*c.cols/group, false)}}
			x, out := randF32(rng, c.n*c.cols), make([]float32, c.n*c.rows)
			buf, s := newInputBuf(c.cols, c.n), newScratch(c.cols, c.n)
			for _, ks := range kernelSets[1:] {
				b.Run(fmt.Sprintf("q%d/%s/%s", bits, c.name, ks.name), func(b *testing.B) {
					m.ks = &ks
					var in input
					for range b.N {
						in.prepare(m.ks, &buf, x, c.n, c.cols, m.layout(), nil, nil)
						if c.n == 1 {
							m.gemv(out, &in, 0, c.rows, s)
						} else {
							gemm(m.ks, m, out, &in, 0, c.rows, s)
						}
					}
				})
			}
		}
	}
}

// BenchmarkBlockGemv times one decode product of GGUF blocks (a 2048×2048
// matrix, one input) per type on each kernel set: an int8 set with its
// own kernels, a float set dequantising.
func BenchmarkBlockGemv(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 2048, 2048
	for _, typ := range i8BlockTypes {
		m := &blockMatrix{dense: dense{rows: rows, cols: cols}, typ: typ, data: randBlocks(rng, typ, rows, cols, false),
			rowBytes: cols / typ.BlockSize() * typ.BlockBytes(), block: typ.BlockSize()}
		x, out := randF32(rng, cols), make([]float32, rows)
		buf, s := newInputBuf(cols, 1), newScratch(cols, 1)
		for _, ks := range kernelSets[1:] {
			b.Run(fmt.Sprintf("%s/%s", typ, ks.name), func(b *testing.B) {
				m.ks = &ks
				var in input
				for range b.N {
					in.prepare(m.ks, &buf, x, 1, cols, m.layout(), nil, nil)
					m.gemv(out, &in, 0, rows, s)
				}
			})
		}
	}
}

// BenchmarkAttention times one decode step's attention of one layer on
// the 1B shape (32 query heads, 8 kv heads of 64) after 2,048 positions,
// on one worker: each query head on its own (per 1) and the four heads
// of a group together (per 4), which read each block of keys and values
// once for the group.
func BenchmarkAttention(b *testing.B) {
	const heads, kvHeads, hd, n = 32, 8, 64, 2048
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range engine.KVTypes {
		c := newCache(nil, typ, 1, kvHeads, hd, n)
		c.reserve(n)
		kv := randF32(rng, n*kvHeads*hd)
		c.store(&goKernels, 0, 0, n, kv, randF32(rng, n*kvHeads*hd))
		c.n = n
		for _, per := range []int{1, heads / kvHeads} {
			s := newScratch(heads*hd, 1)
			s.q, s.o, s.scores, s.top = make([]float32, per*hd), make([]float32, per*hd), make([]float32, per*n), make([]float32, per)
			s.sum = make([]float32, per)
			j := attnJob{ks: envKernels(b), c: c, p0: n - 1, n: 1, heads: heads, group: heads / kvHeads, per: per, tpi: attnTokens(per), hd: hd,
				q: randF32(rng, heads*hd), out: make([]float32, heads*hd), scr: []*scratch{s}}
			b.Run(fmt.Sprintf("%s/per%d", typ, per), func(b *testing.B) {
				for range b.N {
					j.run(0, j.items(), 0)
				}
			})
		}
	}
}

// BenchmarkAttentionDeep times one decode step's attention over every
// layer of the 1B shape (16 layers, 32 query heads, 8 kv heads of 64)
// after 8,192 positions, on one worker: 256 MB of f16 keys and values,
// read from memory as a decode step deep in a chat reads them.
func BenchmarkAttentionDeep(b *testing.B) {
	const layers, heads, kvHeads, hd, n = 16, 32, 8, 64, 8192
	rng := rand.New(rand.NewPCG(1, 2))
	for _, typ := range []engine.KVType{engine.KVF16, engine.KVQ8} {
		c := newCache(nil, typ, layers, kvHeads, hd, n)
		c.reserve(n)
		kv := randF32(rng, n*kvHeads*hd)
		for l := range layers {
			c.store(&goKernels, l, 0, n, kv, kv)
		}
		c.n = n
		per := heads / kvHeads
		s := newScratch(heads*hd, 1)
		s.q, s.o, s.scores = make([]float32, per*hd), make([]float32, per*hd), make([]float32, per*n)
		s.top, s.sum = make([]float32, per), make([]float32, per)
		j := attnJob{ks: envKernels(b), c: c, p0: n - 1, n: 1, heads: heads, group: per, per: per, tpi: 1, hd: hd,
			q: randF32(rng, heads*hd), out: make([]float32, heads*hd), scr: []*scratch{s}}
		b.Run(string(typ), func(b *testing.B) {
			for range b.N {
				for l := range layers {
					j.layer = l
					j.run(0, j.items(), 0)
				}
			}
			b.ReportMetric(float64(typ.BytesPerToken(layers, kvHeads*hd)*n)/1e9/(b.Elapsed().Seconds()/float64(b.N)), "GB/s")
		})
		c.Close()
	}
}
