package cpu

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
)

func BenchmarkGemvQ4(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows, cols, group := 8192, 2048, 64
	w := randU32(rng, rows*cols/8)
	sc := randF32(rng, rows*cols/group)
	x := randF32(rng, cols)
	out := make([]float32, rows)
	b.SetBytes(int64(len(w) * 4))
	for range b.N {
		kern.gemvQ4(out, w, halfVec{f32: sc}, x, group)
	}
}

func BenchmarkGemvQ4Small(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows, cols, group := 64, 2048, 64
	w := randU32(rng, rows*cols/8)
	sc := randF32(rng, rows*cols/group)
	x := randF32(rng, cols)
	out := make([]float32, rows)
	b.SetBytes(int64(len(w) * 4))
	for range b.N {
		kern.gemvQ4(out, w, halfVec{f32: sc}, x, group)
	}
}

func BenchmarkWidenBF16(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	h := randHalf(rng, 512, false)
	d := make([]float32, 512)
	b.SetBytes(1024)
	for range b.N {
		kern.widenBF16(d, h)
	}
}
func BenchmarkGemm4(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	k, np := 2048, 64
	w := randF32(rng, 4*k)
	xT := randF32(rng, k*np)
	tile := make([]float32, 4*np)
	for range b.N {
		kern.gemm4(tile, 4, np, false, w, k, xT, np)
	}
	b.ReportMetric(float64(b.N)*float64(4*k*np)/b.Elapsed().Seconds()/1e9, "GMAC/s")
}

func BenchmarkGemvQ4BF16(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows, cols, group := 64, 2048, 64
	w := randU32(rng, rows*cols/8)
	sc := halfVec{u16: randHalf(rng, rows*cols/group, false)}
	x := randF32(rng, cols)
	out := make([]float32, rows)
	b.SetBytes(int64(len(w) * 4))
	for _, ks := range kernelSets() {
		b.Run(ks.name, func(b *testing.B) {
			for range b.N {
				ks.gemvQ4(out, w, sc, x, group)
			}
		})
	}
}
func BenchmarkGemm4All(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	k, np := 2048, 64
	w := randF32(rng, 4*k)
	xT := randF32(rng, k*np)
	tile := make([]float32, 4*np)
	for _, ks := range kernelSets() {
		b.Run(ks.name, func(b *testing.B) {
			for range b.N {
				ks.gemm4(tile, 4, np, false, w, k, xT, np)
			}
			b.ReportMetric(float64(b.N)*float64(4*k*np)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

func BenchmarkGemvQ4DRAM(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows, cols, group := 8192*16, 2048, 64
	w := randU32(rng, rows*cols/8)
	sc := halfVec{u16: randHalf(rng, rows*cols/group, false)}
	x := randF32(rng, cols)
	out := make([]float32, rows)
	b.SetBytes(int64(len(w)*4 + len(sc.u16)*2))
	for _, ks := range kernelSets()[1:] {
		b.Run(ks.name, func(b *testing.B) {
			for range b.N {
				ks.gemvQ4(out, w, sc, x, group)
			}
		})
	}
}

func BenchmarkDotDRAM(b *testing.B) {
	n := 16 << 20
	x := make([]float32, n)
	y := make([]float32, n)
	for i := range x {
		x[i] = 1
		y[i] = 2
	}
	b.SetBytes(int64(8 * n))
	for range b.N {
		kern.dot(x, y)
	}
}

func BenchmarkGemvF32DRAM(b *testing.B) {
	rows, cols := 8192, 2048
	w := make([]float32, rows*cols)
	x := make([]float32, cols)
	out := make([]float32, rows)
	b.SetBytes(int64(4 * len(w)))
	for range b.N {
		kern.gemvF32(out, w, x)
	}
}
func BenchmarkGemvBF16DRAM(b *testing.B) {
	rows, cols := 8192*2, 2048
	w := make([]uint16, rows*cols)
	x := make([]float32, cols)
	out := make([]float32, rows)
	b.SetBytes(int64(2 * len(w)))
	for range b.N {
		kern.gemvBF16(out, w, x)
	}
}

func BenchmarkGemm4K(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{2048, 8192} {
		np := 64
		w := randF32(rng, 4*k*16)
		xT := randF32(rng, k*np)
		tile := make([]float32, 4*np)
		b.Run(fmt.Sprint(k), func(b *testing.B) {
			for i := range b.N {
				kern.gemm4(tile, 4, np, false, w[(i%16)*4*k:], k, xT, np)
			}
			b.ReportMetric(float64(b.N)*float64(4*k*np)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}

func cpuTime() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func BenchmarkPrefillCPU(b *testing.B) {
	be, m := benchModel(b)
	c, _ := be.NewCache(512)
	logits := make([]float32, m.Config.VocabSize)
	prompt := make([]int32, 128)
	for i := range prompt {
		prompt[i] = int32(i * 37)
	}
	be.Forward(c, prompt, logits)
	t0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		c.Truncate(0)
		be.Forward(c, prompt, logits)
	}
	b.ReportMetric(float64(b.N*len(prompt))/(cpuTime()-t0), "tok/s")
}

func BenchmarkDecodeCPU(b *testing.B) {
	be, m := benchModel(b)
	c, _ := be.NewCache(512)
	logits := make([]float32, m.Config.VocabSize)
	prompt := make([]int32, 128)
	for i := range prompt {
		prompt[i] = int32(i * 37)
	}
	be.Forward(c, prompt, logits)
	t0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		c.Truncate(len(prompt))
		be.Forward(c, []int32{9}, logits)
	}
	b.ReportMetric(float64(b.N)/(cpuTime()-t0), "tok/s")
}

func BenchmarkDequant(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	cols, group := 1024, 64
	w := randU32(rng, cols/8)
	sc, bi := randF32(rng, cols/group), randF32(rng, cols/group)
	d := make([]float32, cols)
	b.SetBytes(int64(cols))
	for range b.N {
		kern.dequantQ4(d, w, sc, bi, group)
	}
}

var benchBatch = 128
