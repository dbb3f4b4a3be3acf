package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

var i8BlockTypes = []gguf.Type{gguf.Q4_0, gguf.Q4_1, gguf.Q8_0}

// blockSets are the kernel sets this CPU runs with int8 GGUF kernels.
func blockSets() []kernelSet {
	var sets []kernelSet
	for _, ks := range kernelSets {
		if ks.gemvBlocksI8[0] != nil {
			sets = append(sets, ks)
		}
	}
	return sets
}

// blockCodes returns the codes of a row of blocks of typ as the int8
// kernels read them (Q4_0's minus 8), and each block's d and m (0 but
// for Q4_1).
func blockCodes(typ gguf.Type, row []byte) (q []int32, d, m []float32) {
	bb := typ.BlockBytes()
	for b := 0; b < len(row); b += bb {
		blk := row[b : b+bb]
		d = append(d, f16ToF32(binary.LittleEndian.Uint16(blk)))
		switch typ {
		case gguf.Q8_0:
			m = append(m, 0)
			for _, c := range blk[2:] {
				q = append(q, int32(int8(c)))
			}
			continue
		case gguf.Q4_0:
			m = append(m, 0)
			blk = blk[2:]
		default:
			m = append(m, f16ToF32(binary.LittleEndian.Uint16(blk[2:])))
			blk = blk[4:]
		}
		var hi []int32
		for _, c := range blk {
			lo, h := int32(c&15), int32(c>>4)
			if typ == gguf.Q4_0 {
				lo, h = lo-8, h-8
			}
			q, hi = append(q, lo), append(hi, h)
		}
		q = append(q, hi...)
	}
	return q, d, m
}

// blockExact is Σ_c d·dx·Σ q·xq + m·xsum for each row in float64, and
// the sum of the terms' magnitudes (the scale of float rounding).
func blockExact(typ gguf.Type, w []byte, rows int, xq []int8, dx, xsum []float32) (want, mag []float64) {
	rb := len(w) / rows
	for r := range rows {
		q, d, m := blockCodes(typ, w[r*rb:(r+1)*rb])
		var s, a float64
		for c := range d {
			var acc int64
			for k := c * 32; k < (c+1)*32; k++ {
				acc += int64(q[k]) * int64(xq[k])
			}
			t1, t2 := float64(d[c])*float64(dx[c])*float64(acc), float64(m[c])*float64(xsum[c])
			s += t1 + t2
			a += math.Abs(t1) + math.Abs(t2)
		}
		want, mag = append(want, s), append(mag, a)
	}
	return want, mag
}

// randBlocks returns rows of blocks of typ with random codes; d and m
// are ±unit (with small integer m) when unit holds, else random.
func randBlocks(rng *rand.Rand, typ gguf.Type, rows, cols int, unit bool) []byte {
	bb := typ.BlockBytes()
	w := make([]byte, rows*cols/32*bb)
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	for b := 0; b < len(w); b += bb {
		d, m := float32(rng.NormFloat64()), float32(rng.NormFloat64())
		if unit {
			d, m = float32(1-2*rng.IntN(2)), float32(rng.IntN(9)-4)
		}
		binary.LittleEndian.PutUint16(w[b:], F32ToF16(d))
		if typ == gguf.Q4_1 {
			binary.LittleEndian.PutUint16(w[b+2:], F32ToF16(m))
		}
	}
	return w
}

// TestBlockKernelsExact checks every int8 GGUF block kernel against the
// integer sums (xsum as quantSums gives it: Q4_0's kernels take its −8
// out through it), first with d = ±1, small integer m and dx = 1,
// so that every partial sum is an integer below 2²⁴ and any difference is
// a wrong code, lane or block; then with random d, m and steps, within
// float rounding.
func TestBlockKernelsExact(t *testing.T) {
	sets := blockSets()
	if len(sets) == 0 {
		t.Skip("this CPU runs no int8 GGUF kernels")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, ks := range sets {
		for _, typ := range i8BlockTypes {
			gemv := ks.gemvBlocksI8[blockI8Type(typ)]
			for _, cols := range []int{32, 96, 576, 1152} {
				for _, rows := range []int{1, 3, 17} {
					what := fmt.Sprintf("%s %s %d×%d", ks.name, typ, rows, cols)
					chunks := cols / 32
					xq := make([]int8, cols)
					for i := range xq {
						xq[i] = int8(rng.IntN(255) - 127)
					}
					ones, xsum := make([]float32, chunks), make([]float32, chunks)
					for c := range ones {
						ones[c] = 1
					}
					quantSums(xsum, ones, xq, i8Natural)
					out := make([]float32, rows)
					w := randBlocks(rng, typ, rows, cols, true)
					gemv(out, w, xq, ones, xsum)
					want, _ := blockExact(typ, w, rows, xq, ones, xsum)
					for r, v := range out {
						if float64(v) != want[r] {
							t.Fatalf("%s, unit scales: row %d = %g, exact %g", what, r, v, want[r])
						}
					}
					w, dx := randBlocks(rng, typ, rows, cols, false), randF32(rng, chunks)
					quantSums(xsum, dx, xq, i8Natural)
					gemv(out, w, xq, dx, xsum)
					want, mag := blockExact(typ, w, rows, xq, dx, xsum)
					for r, v := range out {
						if d := math.Abs(float64(v) - want[r]); d > 1e-5*mag[r] {
							t.Fatalf("%s: row %d = %g, exact %g", what, r, v, want[r])
						}
					}
				}
			}
		}
	}
}

// TestBlockKernelsExtremes checks the int8 GGUF kernels, single-input and
// batch (fillI8's panels through gemmI8), where the byte products are
// largest: Q4_0's code −8, Q4_1's 15, Q8_0's −128 and 127, times
// activations all 127 or all −127, against the exact integer sum.
func TestBlockKernelsExtremes(t *testing.T) {
	const cols, rows, np = 160, 16, 16
	chunks := cols / 32
	for _, ks := range blockSets() {
		saved := kern
		kern = ks
		for _, c := range []struct {
			typ  gguf.Type
			code byte // every byte of the codes
			q    int  // the code it means
		}{{gguf.Q4_0, 0x00, -8}, {gguf.Q4_1, 0xff, 15}, {gguf.Q8_0, 0x80, -128}, {gguf.Q8_0, 0x7f, 127}} {
			bb := c.typ.BlockBytes()
			w := make([]byte, rows*chunks*bb)
			for b := 0; b < len(w); b += bb {
				head := 2
				if c.typ == gguf.Q4_1 {
					head = 4
				}
				binary.LittleEndian.PutUint16(w[b:], 0x3c00) // d = 1, m = 0
				for i := b + head; i < b+bb; i++ {
					w[i] = c.code
				}
			}
			m, err := newBlockMatrix(&engine.Tensor{Name: "w", Shape: []int{rows, cols}, DType: safetensors.U8, Data: w, Blocks: c.typ})
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range []int8{127, -127} {
				what := fmt.Sprintf("%s %s codes %d, x = %d", ks.name, c.typ, c.q, x)
				want := float32(c.q * int(x) * cols)
				xq := make([]int8, cols*np)
				for i := range xq {
					xq[i] = x
				}
				ones, xs := make([]float32, chunks*np), make([]float32, chunks*np)
				for i := range ones {
					ones[i], xs[i] = 1, float32(32*int(x))
				}
				out := make([]float32, rows)
				ks.gemvBlocksI8[blockI8Type(c.typ)](out, w, xq[:cols], ones[:chunks], xs[:chunks])
				for r, v := range out {
					if v != want {
						t.Fatalf("%s: row %d = %g, want %g", what, r, v, want)
					}
				}
				p := newI8Panel(cols)
				m.fillI8(&p, 0, rows)
				tile := make([]float32, 16*np)
				ks.gemmI8[m.gemmBits()/8](tile, &p, xq, ones, xs, np, np)
				for i, v := range tile {
					if v != want {
						t.Fatalf("%s: batch row %d input %d = %g, want %g", what, i%16, i/16, v, want)
					}
				}
			}
		}
		kern = saved
	}
}

// TestBlockPanels checks the panels fillI8 lays out: that scale·code +
// bias is each weight as gguf.Dequantize gives it, and that the assembly
// kernels of every set lay out whole panels exactly as the Go code does.
func TestBlockPanels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const rows, cols = 32, 160
	for _, typ := range i8BlockTypes {
		w := randBlocks(rng, typ, rows, cols, false)
		m, err := newBlockMatrix(&engine.Tensor{Name: "w", Shape: []int{rows, cols}, DType: safetensors.U8, Data: w, Blocks: typ})
		if err != nil {
			t.Fatal(err)
		}
		saved := kern
		kern.panelBlocksI8 = [3]blockPanelI8{}
		want := newI8Panel(cols)
		m.fillI8(&want, 16, 16)
		kern = saved
		row := make([]float32, cols)
		for r := range 16 {
			m.row(row, 16+r)
			for k, v := range row {
				c := k / 32
				got := want.s[c*16+r]*float32(want.w[(k/4*16+r)*4+k%4]) + want.b[c*16+r]
				if d := math.Abs(float64(got - v)); d > 1e-6*math.Abs(float64(want.s[c*16+r]))*256 {
					t.Fatalf("%s: row %d column %d: panel %g, dequantised %g", typ, r, k, got, v)
				}
			}
		}
		for _, ks := range blockSets() {
			f := ks.panelBlocksI8[blockI8Type(typ)]
			if f == nil {
				continue
			}
			got := newI8Panel(cols)
			f(&got, w[16*m.rowBytes:], m.rowBytes)
			for i := range 16 * cols {
				if got.w[i] != want.w[i] {
					t.Fatalf("%s %s: code %d = %d, want %d", ks.name, typ, i, got.w[i], want.w[i])
				}
			}
			for i := range 16 * cols / 32 {
				if got.s[i] != want.s[i] || got.b[i] != want.b[i] {
					t.Fatalf("%s %s: scale, bias %d = %g, %g, want %g, %g", ks.name, typ, i, got.s[i], got.b[i], want.s[i], want.b[i])
				}
			}
		}
	}
}
