package cpu

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/internal/half"
)

// quantI8Go is what every quantI8 kernel computes: it sets xq to x in
// int8 (rounded to nearest even), int8Block elements to a step
// dx[c] = max|x| / 127 over each block c, and xsum[c] to the block's float
// sum, xq in the given order.
func quantI8Go(xq []int8, dx, xsum, x []float32, order i8Order) {
	const group = int8Block
	cols := len(x)
	for g := range cols / group {
		xg := x[g*group : (g+1)*group]
		var amax, s float32
		for _, v := range xg {
			amax = max(amax, abs32(v))
			s += v
		}
		xsum[g] = s
		dx[g] = amax / 127
		inv := float32(0)
		if amax > 0 {
			inv = 127 / amax
		}
		for i, v := range xg {
			xq[order.pos(g*group+i, cols)] = int8(math.RoundToEven(float64(v * inv)))
		}
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

// int8Bound is how far a single-input product of row r of m (dequantised
// in row) with x may be from the float one when the kernels quantise x to
// int8: each element moves by at most half its block's step, and the whole
// weight meets it (the bias multiplies the sum of the rounded activations,
// quantSums), so the product moves by at most Σ|w|·step/2. It is 0 when
// m's kernels multiply in float.
func int8Bound(m matrix, r int, row, x []float32) float64 {
	if !m.layout().int8 {
		return 0
	}
	var bound float64
	for c := 0; c < len(row); c += int8Block {
		var amax, wsum float64
		for i := c; i < c+int8Block; i++ {
			amax = max(amax, math.Abs(float64(x[i])))
			wsum += math.Abs(float64(row[i]))
		}
		bound += wsum * amax / 127 / 2
	}
	return bound * (1 + 1e-5)
}

// int8Sets are the kernel sets this CPU runs that have int8 kernels.
func int8Sets() []kernelSet {
	var sets []kernelSet
	for _, ks := range kernelSets {
		if ks.gemvQ4I8 != nil {
			sets = append(sets, ks)
		}
	}
	return sets
}

// TestQ4I8Index checks that the int8 q4 order is a permutation.
func TestQ4I8Index(t *testing.T) {
	for _, cols := range []int{32, 96, 128, 160, 416} {
		seen := make([]bool, cols)
		for k := range cols {
			i := q4I8Index(k, cols)
			if i < 0 || i >= cols || seen[i] {
				t.Fatalf("cols %d: element %d goes to %d, taken or outside", cols, k, i)
			}
			seen[i] = true
		}
	}
}

// TestQuantizeI8 checks the activation quantisation against its
// definition: each element within half a step of x, the largest of a
// group at ±127, sums exact.
func TestQuantizeI8(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, cols := range []int{96, 416} {
		const group = int8Block
		x := randF32(rng, cols)
		x[5] = 0
		clear(x[group : 2*group]) // an all-zero block
		xq, dx, xsum := make([]int8, cols), make([]float32, cols/group), make([]float32, cols/group)
		quantI8Go(xq, dx, xsum, x, i8Q4Blocks)
		for k, v := range x {
			g := k / group
			got := float32(xq[q4I8Index(k, cols)]) * dx[g]
			if d := math.Abs(float64(got - v)); d > 0.5*float64(dx[g])*(1+1e-6) {
				t.Fatalf("%d: x[%d] = %g quantised to %g (step %g)", cols, k, v, got, dx[g])
			}
		}
		if dx[1] != 0 || xsum[1] != 0 {
			t.Errorf("zero group: dx %g, sum %g", dx[1], xsum[1])
		}
		if want := sum(x[:group]); xsum[0] != want {
			t.Errorf("xsum[0] = %g, want %g", xsum[0], want)
		}
	}
}

// TestQuantI8 checks every quantI8 kernel against quantI8Go: xq and dx
// exactly, the sums within float rounding.
func TestQuantI8(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, ks := range int8Sets() {
		for _, cols := range []int{32, 64, 96, 128, 256, 416, 2048 + 96} {
			for _, q4 := range []i8Order{i8Natural, i8Q4Blocks, i8Nibbles} {
				{
					const group = int8Block
					what := fmt.Sprintf("%s %d, order %d", ks.name, cols, q4)
					x := randF32(rng, cols)
					clear(x[:group/2])
					x[group/2] = -3 // the largest of its group, negative
					if cols > group {
						clear(x[group : 2*group])
					}
					groups := cols / group
					xq1, xq2 := make([]int8, cols), make([]int8, cols)
					dx1, dx2 := make([]float32, groups), make([]float32, groups)
					s1, s2 := make([]float32, groups), make([]float32, groups)
					ks.quantI8(xq1, dx1, s1, x, q4)
					quantI8Go(xq2, dx2, s2, x, q4)
					for i := range xq1 {
						if xq1[i] != xq2[i] {
							t.Fatalf("%s: xq[%d] = %d, want %d", what, i, xq1[i], xq2[i])
						}
					}
					for g := range dx1 {
						if dx1[g] != dx2[g] {
							t.Fatalf("%s: dx[%d] = %g, want %g", what, g, dx1[g], dx2[g])
						}
					}
					agree(t, what+": sums", s1, s2, group)
				}
			}
		}
	}
}

// TestInt8KernelsExact checks every int8 kernel against gemvI8Go. First
// with scales ±1, steps 1 and small integer biases and sums, so that every
// partial sum is an integer below 2²⁴ and the float sums are exact in any
// order: any difference is a wrong integer sum, lane or tail. Then with
// random scales and steps, within float rounding, which catches a lane
// given the wrong group.
func TestInt8KernelsExact(t *testing.T) {
	sets := int8Sets()
	if len(sets) == 0 {
		t.Skip("this CPU runs no int8 kernel set")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, ks := range sets {
		for _, bits := range []int{4, 8} {
			gemv := ks.gemvQ4I8
			if bits == 8 {
				gemv = ks.gemvQ8I8
			}
			for _, group := range []int{32, 64, 128} {
				for _, cols := range []int{group, 2 * group, 3 * group, 416 / group * group, 1152, 8192 + 128} { // 8192: more than 255 blocks
					for _, rows := range []int{1, 3, 17} {
						what := fmt.Sprintf("%s q%d group %d, %d×%d", ks.name, bits, group, rows, cols)
						groups, chunks := cols/group, cols/int8Block
						w := randU32(rng, rows*cols*bits/32)
						xq := make([]int8, cols)
						for i := range xq {
							xq[i] = int8(rng.IntN(255) - 127)
						}
						xq[0] = -127
						ones, xsum := make([]float32, chunks), make([]float32, chunks)
						for g := range ones {
							ones[g] = 1
							xsum[g] = float32(rng.IntN(200) - 100)
						}
						f := make([]float32, chunks+16)
						o1, o2 := make([]float32, rows), make([]float32, rows)
						for i, sc := range unitHalves(rng, rows*groups, 1) {
							bi := unitHalves(rng, rows*groups, 4)[i]
							gemv(o1, w, sc, bi, xq, ones, xsum, f, group)
							gemvI8Go(o2, w, sc, bi, xq, ones, xsum, group, bits)
							for r := range o1 {
								if o1[r] != o2[r] {
									t.Fatalf("%s, dtype %d: row %d = %g, scalar %g", what, i, r, o1[r], o2[r])
								}
							}
						}
						dx := randF32(rng, chunks)
						for i, sc := range halves(rng, rows*groups) {
							bi := halves(rng, rows*groups)[i]
							gemv(o1, w, sc, bi, xq, dx, xsum, f, group)
							gemvI8Go(o2, w, sc, bi, xq, dx, xsum, group, bits)
							want, mag := int8Exact(w, sc, bi, xq, dx, xsum, rows, group, bits)
							for r := range o1 {
								if d := math.Abs(float64(o1[r]) - want[r]); d > 1e-5*mag[r]+1e-30 { // subnormal scales
									t.Fatalf("%s, dtype %d: row %d = %g, exact %g", what, i, r, o1[r], want[r])
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestInt8Extremes checks the int8 kernels where a pair of byte products
// is largest, which AVX2's VPMADDUBSW would saturate in int16 (255·−128·2
// < −32768; int8_ymm_amd64.s splits q8's bytes): every code at its maximum
// times activations all −128, all 127 or all −127, single-input and
// batch, against the exact integer sum (below 2²⁴, so exact in float).
func TestInt8Extremes(t *testing.T) {
	const cols, np = 160, 16 // a block of 128 and a tail chunk
	chunks := cols / int8Block
	for _, ks := range int8Sets() {
		for _, bits := range []int{4, 8} {
			gemv := ks.gemvQ4I8
			if bits == 8 {
				gemv = ks.gemvQ8I8
			}
			for _, x := range []int8{-128, 127, -127} {
				what := fmt.Sprintf("%s q%d, x = %d", ks.name, bits, x)
				want := float32((1<<bits - 1) * int(x) * cols)
				w := make([]uint32, 16*cols*bits/32)
				for i := range w {
					w[i] = ^uint32(0)
				}
				ones, zeros := make([]float32, 16*chunks), make([]float32, 16*chunks)
				for i := range ones {
					ones[i] = 1
				}
				sc, bi := halfVec{f32: ones}, halfVec{f32: zeros}
				xq := make([]int8, cols*np)
				for i := range xq {
					xq[i] = x
				}
				out := make([]float32, 16)
				gemv(out, w, sc, bi, xq[:cols], ones[:chunks], zeros[:chunks], make([]float32, chunks+16), int8Block)
				for r, v := range out {
					if v != want {
						t.Fatalf("%s: row %d = %g, want %g", what, r, v, want)
					}
				}
				p := newI8Panel(cols)
				ks.panelI8[bits/8](&p, w, sc, bi, 16, cols, int8Block)
				tile := make([]float32, 16*np)
				ks.gemmI8[bits/8](tile, &p, xq, ones[:chunks*np], zeros[:chunks*np], nil, np, np)
				for i, v := range tile {
					if v != want {
						t.Fatalf("%s: batch row %d input %d = %g, want %g", what, i%16, i/16, v, want)
					}
				}
			}
		}
	}
}

// int8Exact is the int8 product in float64, and the sum of the magnitudes
// of its terms (the scale of float32 rounding), computed from the
// definition: codes in natural order, xq through q4I8Index.
func int8Exact(w []uint32, sc, bi halfVec, xq []int8, dx, xsum []float32, rows, group, bits int) (want, mag []float64) {
	cols := len(xq)
	want, mag = make([]float64, rows), make([]float64, rows)
	for r := range rows {
		for k := range cols {
			bit := r*cols*bits + k*bits
			q := float64(w[bit/32] >> (bit % 32) & (1<<bits - 1))
			i := k
			if bits == 4 {
				i = q4I8Index(k, cols)
			}
			term := float64(sc.at(r*cols/group+k/group)) * float64(dx[k/int8Block]) * q * float64(xq[i])
			want[r] += term
			mag[r] += math.Abs(term)
		}
		for c := range cols / int8Block {
			term := float64(bi.at(r*cols/group+c*int8Block/group)) * float64(xsum[c])
			want[r] += term
			mag[r] += math.Abs(term)
		}
	}
	return want, mag
}

// unitHalves returns n random integers in [-m, m] without 0, in each dtype
// (exact in all three).
func unitHalves(rng *rand.Rand, n, m int) []halfVec {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.IntN(m) + 1)
		if rng.IntN(2) == 0 {
			v[i] = -v[i]
		}
	}
	b, h := make([]uint16, n), make([]uint16, n)
	for i, x := range v {
		b[i], h[i] = half.F32ToBF16(x), half.F32ToF16(x)
	}
	return []halfVec{{f32: v}, {u16: b}, {u16: h, f16: true}}
}

// TestGeneratedAssembly checks that int8_vnni_amd64.s, int8_ymm_amd64.s
// and int8_amx_amd64.s are what their generator writes: edit
// internal/vnnigen, then go generate.
func TestGeneratedAssembly(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("skipped: the generated assembly is amd64's, checked there")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("skipped: no go command on PATH")
	}
	dir := t.TempDir()
	if out, err := exec.Command(gobin, "run", "./internal/vnnigen", "-dir", dir).CombinedOutput(); err != nil {
		t.Fatalf("go run ./internal/vnnigen: %v\n%s", err, out)
	}
	for _, name := range []string{"int8_vnni_amd64.s", "int8_ymm_amd64.s", "int8_amx_amd64.s"} {
		want, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what internal/vnnigen writes: run go generate ./engine/cpu/", name)
		}
	}
}

// TestInt8Batch checks the batch kernels: every panel kernel against
// panelI8Go exactly, and the product of a prepared batch against the
// single-input int8 kernels, which do the same integer maths in another
// order.
func TestInt8Batch(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, ks := range int8Sets() {
		for _, bits := range []int{4, 8} {
			for _, group := range []int{32, 64, 128} {
				for _, cols := range []int{group, 3 * group, 1152} {
					for _, rows := range []int{5, 16, 37} {
						for i, sc := range halves(rng, rows*cols/group) {
							what := fmt.Sprintf("%s q%d group %d, %d×%d, dtype %d", ks.name, bits, group, rows, cols, i)
							m := &affineMatrix{dense: dense{rows, cols, &ks}, bits: bits, group: group,
								packed: randU32(rng, rows*cols*bits/32), scales: sc, biases: halves(rng, rows*cols/group)[i]}
							nr := min(rows, 16)
							p1, p2 := newI8Panel(cols), newI8Panel(cols)
							ks.panelI8[bits/8](&p1, m.packed, m.scales, m.biases, nr, cols, group)
							panelI8Go(&p2, m.packed, m.scales, m.biases, nr, cols, group, bits)
							if !slices.Equal(panelCodes(&p1), p2.w) || !slices.Equal(p1.s, p2.s) || !slices.Equal(p1.b, p2.b) {
								t.Fatalf("%s: panel differs from panelI8Go", what)
							}
							for _, n := range []int{2, 9, 16, 23} {
								x := randF32(rng, n*cols)
								batched := mulAll(&ks, m, x, n)
								row := make([]float32, cols)
								for b := range n {
									xb := x[b*cols : (b+1)*cols]
									single := mulAll(&ks, m, xb, 1)
									for r := range rows {
										// The terms s·q·x and b·x cancel: rounding
										// scales with their magnitudes.
										m.row(row, r)
										var mag float64
										for k, v := range row {
											bias := float64(m.biases.at(r*cols/group + k/group))
											mag += (math.Abs(float64(v)) + 2*math.Abs(bias)) * math.Abs(float64(xb[k]))
										}
										got, want := batched[b*rows+r], single[r]
										if math.Abs(float64(got-want)) > 1e-5*mag {
											t.Fatalf("%s, %d inputs: row %d input %d = %g, single input %g", what, n, r, b, got, want)
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestInt8GemmExact checks every batch kernel against the integer maths
// in scalar Go: with scales in {-1, 0, 1}, steps 1 and small integer
// biases and sums, every float sum is an exact integer, so any difference
// is a wrong integer sum, lane, row or input.
func TestInt8GemmExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, ks := range int8Sets() {
		for _, bits := range []int{4, 8} {
			for _, cols := range []int{32, 96, 1152} {
				for _, np := range []int{16, 32} {
					chunks, nt := cols/int8Block, np-8
					p := newI8Panel(cols)
					for i := range p.w {
						p.w[i] = uint8(rng.IntN(1 << bits))
					}
					for i := range p.s {
						p.s[i], p.b[i] = float32(rng.IntN(3)-1), float32(rng.IntN(9)-4)
					}
					xq := make([]int8, cols*np)
					for i := range xq {
						xq[i] = int8(rng.IntN(255) - 127)
					}
					dx, xs := make([]float32, chunks*np), make([]float32, chunks*np)
					for i := range dx {
						dx[i], xs[i] = 1, float32(rng.IntN(200)-100)
					}
					tile := make([]float32, 16*nt)
					check := func(kernel string) {
						t.Helper()
						for in := range nt {
							for r := range 16 {
								var want int64
								for k := range cols {
									c := k / int8Block
									q := int64(p.w[(k/4*16+r)*4+k%4]) * int64(xq[(k/4*np+in)*4+k%4])
									want += int64(p.s[c*16+r]) * q
									if k%int8Block == 0 {
										want += int64(p.b[c*16+r]) * int64(xs[c*np+in])
									}
								}
								if got := tile[in*16+r]; got != float32(want) {
									t.Fatalf("%s %s q%d, %d columns, %d of %d inputs: row %d input %d = %g, want %d", ks.name, kernel, bits, cols, nt, np, r, in, got, want)
								}
							}
						}
					}
					ks.gemmI8[bits/8](tile, &p, xq, dx, xs, nil, np, nt)
					check("gemmI8")
					if ks.gemmPairs != nil && chunks%2 == 0 {
						// Groups of 64: each pair of chunks shares its biases.
						for c := 1; c < chunks; c += 2 {
							copy(p.b[c*16:(c+1)*16], p.b[(c-1)*16:c*16])
						}
						ks.gemmPairs(tile, &p, xq, dx, xs, nil, np, nt)
						check("gemmPairs")
					}
				}
			}
		}
	}
}

// TestChooseKernels checks the names Options.Kernels and
// DRIFTWOOD_KERNELS take: a set's name, "float" (never an int8 set), and
// an unknown one, refused with the names there are and where it came
// from; DRIFTWOOD_NOSIMD=1 means go, and an empty name the fastest.
func TestChooseKernels(t *testing.T) {
	m := load(t, "tiny-mlx-q4", Options{Kernels: "go"}).m
	t.Setenv("DRIFTWOOD_NOSIMD", "") // whatever the test run was given
	t.Setenv("DRIFTWOOD_KERNELS", "")
	b, err := New(m, Options{Kernels: "float"})
	if err != nil || b.Int8() {
		t.Fatalf("float: %v", err)
	}
	b.Close()
	for _, ks := range kernelSets {
		b, err := New(m, Options{Kernels: ks.name})
		if err != nil || b.Kernels() != ks.name || b.Int8() != ks.int8() {
			t.Fatalf("%s: %v", ks.name, err)
		}
		b.Close()
	}
	if name, _, _ := DefaultKernels(); name != kernelSets[len(kernelSets)-1].name {
		t.Fatalf("default %s, want the fastest", name)
	}
	if _, err := New(m, Options{Kernels: "avx9000"}); err == nil || !strings.Contains(err.Error(), `"avx9000"`) || !strings.Contains(err.Error(), "go,") {
		t.Fatalf("unknown set: %v", err)
	}
	t.Setenv("DRIFTWOOD_KERNELS", "avx9000")
	if _, err := New(m, Options{}); err == nil || !strings.Contains(err.Error(), "DRIFTWOOD_KERNELS") {
		t.Fatalf("unknown DRIFTWOOD_KERNELS: %v", err)
	}
	if b, err := New(m, Options{Kernels: "go"}); err != nil || b.Kernels() != "go" {
		t.Fatalf("an option over an unknown DRIFTWOOD_KERNELS: %v", err)
	}
	t.Setenv("DRIFTWOOD_NOSIMD", "1") // over DRIFTWOOD_KERNELS too
	if name, _, err := DefaultKernels(); err != nil || name != goKernels.name {
		t.Fatalf("DRIFTWOOD_NOSIMD=1: kernel set %s, %v", name, err)
	}
}

// TestQuantSums checks each chunk's sum of quantised activations in every
// order against the sum over the chunk's elements found through their
// positions, on lengths with and without a tail after the last 128-block.
func TestQuantSums(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, cols := range []int{32, 96, 128, 160, 416, 2048} {
		for _, order := range []i8Order{i8Natural, i8Q4Blocks, i8Nibbles} {
			xq := make([]int8, cols)
			for i := range xq {
				xq[i] = int8(rng.IntN(256) - 128)
			}
			chunks := cols / int8Block
			dx, xsum := make([]float32, chunks), make([]float32, chunks)
			for c := range dx {
				dx[c] = 1 + float32(c)
			}
			quantSums(xsum, dx, xq, order)
			for c := range chunks {
				var want int32
				for k := c * int8Block; k < (c+1)*int8Block; k++ {
					want += int32(xq[order.pos(k, cols)])
				}
				if got := xsum[c]; got != float32(want)*dx[c] {
					t.Fatalf("cols %d, order %d, chunk %d: %v, want %v", cols, order, c, got, float32(want)*dx[c])
				}
			}
		}
	}
}

// panelCodes returns p's codes in i8Panel.w's layout, whichever layout
// its panel kernel wrote: tile order, in p.a, where p.tiled.
func panelCodes(p *i8Panel) []uint8 {
	if !p.tiled {
		return p.w
	}
	w := make([]uint8, len(p.w))
	for i, code := range p.a {
		c, r, k := i/512, i/32%16, i%32 // chunk, row, column
		w[(c*8+k/4)*64+r*4+k%4] = code
	}
	return w
}
