package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/half"
)

// withKernels runs f once per kernel set this CPU runs (the portable one
// first).
func withKernels(t *testing.T, f func(t *testing.T, ks *kernelSet)) {
	t.Helper()
	for _, ks := range kernelSets {
		t.Run(ks.name, func(t *testing.T) { f(t, &ks) })
	}
}

// envKernels is the kernel set a backend opened with Options.Kernels ""
// uses: the one the test run's environment chose.
func envKernels(t testing.TB) *kernelSet {
	t.Helper()
	ks, err := chooseKernels("")
	if err != nil {
		t.Fatal(err)
	}
	return ks
}

func randF32(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

func randU32(rng *rand.Rand, n int) []uint32 {
	x := make([]uint32, n)
	for i := range x {
		x[i] = rng.Uint32()
	}
	return x
}

// randHalf returns finite bf16 or f16 bit patterns.
func randHalf(rng *rand.Rand, n int, f16 bool) []uint16 {
	x := make([]uint16, n)
	for i := range x {
		v := float32(rng.NormFloat64())
		if f16 {
			x[i] = half.F32ToF16(v)
		} else {
			x[i] = half.F32ToBF16(v)
		}
	}
	x[0] = 0x0001 // a subnormal
	return x
}

// agree fails unless got matches want within float32 rounding of sums
// over terms floats of unit size.
func agree(t *testing.T, what string, got, want []float32, terms int) {
	t.Helper()
	tol := 2e-6 * float64(terms+1)
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*(1+math.Abs(float64(want[i]))) || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s: element %d = %g, portable kernel %g", what, i, got[i], want[i])
		}
	}
}

var oddSizes = []int{1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257}

// TestKernelsAgree checks every vector kernel of every kernel set the CPU
// runs against the portable one, on random inputs of odd sizes.
func TestKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 8))
	ref := goKernels
	for _, ks := range kernelSets[1:] {
		t.Run(ks.name, func(t *testing.T) {
			for _, n := range oddSizes {
				a, b := randF32(rng, n), randF32(rng, n)
				g1, g2 := randF32(rng, n), make([]float32, n)
				for i := range g1 {
					g1[i] *= 10 // past exp's range at the extremes
				}
				g1[0] = 100
				copy(g2, g1)
				ks.swiglu(g1, a)
				ref.swiglu(g2, a)
				agree(t, fmt.Sprint("swiglu ", n), g1, g2, 1)
				copy(g2, b)
				s1, s2 := ks.expSum(b, 0.5), ref.expSum(g2, 0.5)
				agree(t, fmt.Sprint("expSum ", n), b, g2, 1)
				agree(t, fmt.Sprint("expSum total ", n), []float32{s1}, []float32{s2}, n)
				for _, f16 := range []bool{false, true} {
					h := randHalf(rng, n, f16)
					w1, w2 := make([]float32, n+1), make([]float32, n+1)
					widen, refWiden := ks.widenBF16, ref.widenBF16
					if f16 {
						widen, refWiden = ks.widenF16, ref.widenF16
					}
					widen(w1, h)
					refWiden(w2, h)
					agree(t, fmt.Sprint("widen f16=", f16, " ", n), w1, w2, 0)
				}
			}
			for _, rows := range []int{1, 2, 5} {
				for _, cols := range []int{1, 7, 8, 9, 33, 64, 100} {
					x := randF32(rng, cols)
					o1, o2 := make([]float32, rows), make([]float32, rows)
					w := randF32(rng, rows*cols)
					ks.gemvF32(o1, w, x)
					ref.gemvF32(o2, w, x)
					agree(t, fmt.Sprint("gemvF32 ", rows, "×", cols), o1, o2, cols)
					a, t1 := randF32(rng, rows), randF32(rng, cols)
					t2 := append([]float32(nil), t1...)
					ks.gemvT(t1, w, a)
					ref.gemvT(t2, w, a)
					agree(t, fmt.Sprint("gemvT ", rows, "×", cols), t1, t2, rows)
					h := randHalf(rng, rows*cols, false)
					ks.gemvBF16(o1, h, x)
					ref.gemvBF16(o2, h, x)
					agree(t, fmt.Sprint("gemvBF16 ", rows, "×", cols), o1, o2, cols)
					h = randHalf(rng, rows*cols, true)
					ks.gemvF16(o1, h, x)
					ref.gemvF16(o2, h, x)
					agree(t, fmt.Sprint("gemvF16 ", rows, "×", cols), o1, o2, cols)
					for _, f16 := range []bool{false, true} {
						h := randHalf(rng, rows*cols, f16)
						copy(t2, t1)
						gemvT, refGemvT := ks.gemvTBF16, ref.gemvTBF16
						if f16 {
							gemvT, refGemvT = ks.gemvTF16, ref.gemvTF16
						}
						gemvT(t1, h, a)
						refGemvT(t2, h, a)
						agree(t, fmt.Sprint("gemvT f16=", f16, " ", rows, "×", cols), t1, t2, rows)
					}
					if cols%engine.Q8Block == 0 {
						testQ8Kernels(t, rng, ks, rows, cols)
					}
				}
			}
			testAffineKernels(t, rng, ks)
			for _, np := range []int{16, 32, 48, 64, 80} {
				for _, k := range []int{0, 1, 3, 17, 64} {
					n, ldo, stride := np-5, 7, k+5
					w, xT := randF32(rng, 4*stride), randF32(rng, k*np)
					o1 := randF32(rng, n*ldo)
					o2 := append([]float32(nil), o1...)
					ks.gemm4(o1, ldo, n, w, stride, xT, np)
					ref.gemm4(o2, ldo, n, w, stride, xT, np)
					agree(t, fmt.Sprint("gemm4 np=", np, " k=", k), o1, o2, k)
				}
			}
		})
	}
}

// halves returns n random scales (or biases) in each dtype an affine
// matrix may store them in.
func halves(rng *rand.Rand, n int) []halfVec {
	return []halfVec{
		{f32: randF32(rng, n)},
		{u16: randHalf(rng, n, false)},
		{u16: randHalf(rng, n, true), f16: true},
	}
}

func testAffineKernels(t *testing.T, rng *rand.Rand, ks kernelSet) {
	ref := goKernels
	for _, bits := range []int{4, 8} {
		gemv, refGemv, dequant, refDequant := ks.gemvQ4, ref.gemvQ4, ks.dequantQ4, ref.dequantQ4
		if bits == 8 {
			gemv, refGemv, dequant, refDequant = ks.gemvQ8, ref.gemvQ8, ks.dequantQ8, ref.dequantQ8
		}
		for _, group := range []int{32, 64, 128} {
			for _, cols := range []int{group, 2 * group, 3 * group} {
				for _, rows := range []int{1, 3, 17} {
					what := fmt.Sprintf("q%d group %d, %d×%d", bits, group, rows, cols)
					w := randU32(rng, rows*cols*bits/32)
					x := randF32(rng, cols)
					biases, xsum := halves(rng, rows*cols/group), randF32(rng, cols/group)
					for i, sc := range halves(rng, rows*cols/group) {
						for _, bi := range []halfVec{biases[i], biases[(i+1)%3]} {
							o1, o2 := make([]float32, rows), make([]float32, rows)
							gemv(o1, w, sc, bi, x, xsum, group)
							refGemv(o2, w, sc, bi, x, xsum, group)
							// Codes reach 255, so sums are larger than unit size.
							agree(t, fmt.Sprintf("gemv %s, scales %d", what, i), o1, o2, cols*1<<bits)
						}

						// Columns [group, cols) of up to four rows.
						n, kw := min(rows, 4), cols-group
						d1, d2 := make([]float32, n*kw), make([]float32, n*kw)
						wpr, groups := cols*bits/32, cols/group
						ws, ss := w[group*bits/32:], sc.slice(1, sc.len())
						for _, bi := range []halfVec{biases[i], biases[(i+1)%3]} {
							bs := bi.slice(1, bi.len())
							dequant(d1, kw, ws, wpr, ss, bs, groups, n, group)
							refDequant(d2, kw, ws, wpr, ss, bs, groups, n, group)
							agree(t, fmt.Sprintf("dequant %s, scales %d", what, i), d1, d2, 1)
						}
					}
				}
			}
		}
	}
}

// testQ8Kernels checks the q8_0 attention kernels of ks against the f32
// ones over the same values, dequantised.
func testQ8Kernels(t *testing.T, rng *rand.Rand, ks kernelSet, rows, cols int) {
	w := randF32(rng, rows*cols)
	codes, scales := make([]int8, len(w)), make([]float32, len(w)/engine.Q8Block)
	engine.QuantizeQ8(codes, scales, w)
	for i, c := range codes {
		w[i] = float32(c) * scales[i/engine.Q8Block]
	}
	x, a := randF32(rng, cols), randF32(rng, rows)
	o1, o2 := make([]float32, rows), make([]float32, rows)
	ks.gemvQ8_0(o1, codes, scales, x)
	goKernels.gemvF32(o2, w, x)
	agree(t, fmt.Sprint("gemvQ8_0 ", rows, "×", cols), o1, o2, cols)
	t1 := randF32(rng, cols)
	t2 := append([]float32(nil), t1...)
	ks.gemvTQ8_0(t1, codes, scales, a)
	goKernels.gemvT(t2, w, a)
	agree(t, fmt.Sprint("gemvTQ8_0 ", rows, "×", cols), t1, t2, rows)
}

// TestNarrowF16 holds every set's narrowF16 to half.F32ToF16 bit for bit
// (a NaN only to being a NaN) over random bit patterns, which cover
// subnormal halves, overflow and NaNs, and over the roundings' ties,
// at every length up to 17 (the kernels' tails).
func TestNarrowF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = math.Float32frombits(rng.Uint32())
	}
	// Halfway between two halves (normal and subnormal) and around the
	// largest.
	for i, b := range []uint32{0x3f801000, 0x3f803000, 0x33800000, 0x33c00000, 0x387fe000, 0x477fe000, 0x477ff000, 0x477fefff, 0x80000000, 0x7f800000, 0xff800000} {
		x[i] = math.Float32frombits(b)
	}
	for _, ks := range kernelSets {
		for _, n := range append([]int{len(x)}, 1, 2, 7, 8, 9, 15, 16, 17) {
			got := make([]uint16, n)
			ks.narrowF16(got, x[:n])
			for i, h := range got {
				want := half.F32ToF16(x[i])
				isNaN := func(h uint16) bool { return h&0x7c00 == 0x7c00 && h&0x3ff != 0 }
				if h != want && !(isNaN(h) && isNaN(want)) {
					t.Fatalf("%s, %d values: %#08x -> %#04x, want %#04x", ks.name, n, math.Float32bits(x[i]), h, want)
				}
			}
		}
	}
}
