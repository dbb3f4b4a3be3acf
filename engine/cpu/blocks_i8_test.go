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
	"github.com/driftwoodlabs/driftwood/internal/half"
)

var i8BlockTypes = []gguf.Type{gguf.Q4_0, gguf.Q4_1, gguf.Q8_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K}

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

// blockTerms returns a row of blocks of typ as the integer sums see it:
// each weight is s·q + b with q an integer code (signed for Q4_0, Q8_0
// and Q6_K, whose b is 0), written out here from ggml's layouts
// independently of the kernels.
func blockTerms(typ gguf.Type, row []byte) (q []int32, s, b []float32) {
	le16 := func(b []byte) float32 { return half.F16ToF32(binary.LittleEndian.Uint16(b)) }
	add := func(code int32, scale, bias float32) {
		q, s, b = append(q, code), append(s, scale), append(b, bias)
	}
	bb := typ.BlockBytes()
	for at := 0; at < len(row); at += bb {
		blk := row[at : at+bb]
		switch typ {
		case gguf.Q8_0:
			for _, c := range blk[2:] {
				add(int32(int8(c)), le16(blk), 0)
			}
		case gguf.Q4_0, gguf.Q4_1:
			d, m, codes, off := le16(blk), float32(0), blk[2:], int32(8)
			if typ == gguf.Q4_1 {
				m, codes, off = le16(blk[2:]), blk[4:], 0
			}
			for half := range 2 {
				for _, c := range codes {
					add(int32(c>>(4*half)&15)-off, d, m)
				}
			}
		case gguf.Q4_K, gguf.Q5_K:
			d, dmin, qs := le16(blk), le16(blk[2:]), blk[16:144]
			if typ == gguf.Q5_K {
				qs = blk[48:176]
			}
			for j := range 8 {
				sc, mn := gguf.ScaleMinK4(j, blk[4:16])
				for l := range 32 {
					c := int32(qs[32*(j/2)+l] >> (4 * (j % 2)) & 15)
					if typ == gguf.Q5_K {
						c |= int32(blk[16+l]>>j&1) << 4
					}
					add(c, d*float32(sc), -(dmin * float32(mn)))
				}
			}
		case gguf.Q6_K:
			d := le16(blk[208:])
			for h := range 2 {
				ql, qh, sc := blk[64*h:], blk[128+32*h:], blk[192+8*h:]
				for k := range 4 {
					for l := range 32 {
						c := int32(ql[l+32*(k%2)]>>(4*(k/2))&15) | int32(qh[l]>>(2*k)&3)<<4
						add(c-32, d*float32(int8(sc[2*k+l/16])), 0)
					}
				}
			}
		}
	}
	return q, s, b
}

// blockExact is Σ_k s·dx·q·xq + b·dx·xq over each row in float64, and
// the sum of the terms' magnitudes (the scale of float rounding).
func blockExact(typ gguf.Type, w []byte, rows int, xq []int8, dx []float32) (want, mag []float64) {
	rb := len(w) / rows
	for r := range rows {
		q, s, b := blockTerms(typ, w[r*rb:(r+1)*rb])
		var sum, a float64
		for k := range q {
			t1 := float64(s[k]) * float64(dx[k/32]) * float64(q[k]) * float64(xq[k])
			t2 := float64(b[k]) * float64(dx[k/32]) * float64(xq[k])
			sum += t1 + t2
			a += math.Abs(t1) + math.Abs(t2)
		}
		want, mag = append(want, sum), append(mag, a)
	}
	return want, mag
}

// randBlocks returns rows of blocks of typ with random codes. Their
// scales are random, or, when unit holds, small integers: d = ±1, Q4_1's
// m and the k-quants' dmin small integers, the k-quants' scales and mins
// at most 3.
func randBlocks(rng *rand.Rand, typ gguf.Type, rows, cols int, unit bool) []byte {
	bb, per := typ.BlockBytes(), typ.BlockSize()
	w := make([]byte, rows*cols/per*bb)
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	half := func(b []byte, small float32) {
		v := float32(rng.NormFloat64())
		if unit {
			v = small
		}
		binary.LittleEndian.PutUint16(b, half.F32ToF16(v))
	}
	for at := 0; at < len(w); at += bb {
		b := w[at : at+bb]
		switch typ {
		case gguf.Q4_1:
			half(b[2:], float32(rng.IntN(9)-4))
		case gguf.Q4_K, gguf.Q5_K:
			half(b[2:], float32(rng.IntN(5)-2))
			if unit {
				for i := 4; i < 16; i++ {
					b[i] &= 3
				}
			}
		case gguf.Q6_K:
			half(b[208:], float32(1-2*rng.IntN(2)))
			if unit {
				for i := 192; i < 208; i++ {
					b[i] = byte(rng.IntN(7) - 3)
				}
			}
			continue
		}
		half(b, float32(1-2*rng.IntN(2)))
	}
	return w
}

// TestBlockTerms checks the tests' own reading of the block layouts:
// s·q + b is each weight as gguf.Dequantize gives it.
func TestBlockTerms(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, typ := range i8BlockTypes {
		w := randBlocks(rng, typ, 1, 512, false)
		q, s, b := blockTerms(typ, w)
		want := make([]float32, 512)
		if err := gguf.Dequantize(typ, want, w); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if got := s[k]*float32(q[k]) + b[k]; math.Abs(float64(got-v)) > 1e-6*(math.Abs(float64(v))+math.Abs(float64(b[k]))) {
				t.Fatalf("%s: weight %d = %g, dequantised %g", typ, k, got, v)
			}
		}
	}
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
			for _, cols := range []int{32, 96, 576, 1152, 256, 768} {
				if cols%typ.BlockSize() != 0 {
					continue
				}
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
					var bs []int16 // the sums a folding k-quant kernel takes
					super := isK(typ) && ks.quantK != nil
					if super {
						bs = make([]int16, cols/16)
						sums16(bs, xq)
					}
					out := make([]float32, rows)
					w := randBlocks(rng, typ, rows, cols, true)
					gemv(out, w, xq, ones, xsum, bs)
					want, _ := blockExact(typ, w, rows, xq, ones)
					for r, v := range out {
						if float64(v) != want[r] {
							t.Fatalf("%s, unit scales: row %d = %g, exact %g", what, r, v, want[r])
						}
					}
					w, dx := randBlocks(rng, typ, rows, cols, false), randF32(rng, chunks)
					if super { // one step a super-block
						for c := range dx {
							dx[c] = dx[c&^7]
						}
					}
					quantSums(xsum, dx, xq, i8Natural)
					gemv(out, w, xq, dx, xsum, bs)
					want, mag := blockExact(typ, w, rows, xq, dx)
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
			m, err := newBlockMatrix(&engine.Tensor{Name: "w", Shape: []int{rows, cols}, DType: safetensors.U8, Data: w, Blocks: c.typ}, &ks)
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
				ks.gemvBlocksI8[blockI8Type(c.typ)](out, w, xq[:cols], ones[:chunks], xs[:chunks], nil)
				for r, v := range out {
					if v != want {
						t.Fatalf("%s: row %d = %g, want %g", what, r, v, want)
					}
				}
				p := newI8Panel(cols)
				m.fillI8(&p, 0, rows)
				tile := make([]float32, 16*np)
				m.batchGemm()(tile, &p, xq, ones, xs, nil, np, np)
				for i, v := range tile {
					if v != want {
						t.Fatalf("%s: batch row %d input %d = %g, want %g", what, i%16, i/16, v, want)
					}
				}
			}
		}
	}
}

// TestKQuantExtremes checks the k-quants' single-input kernels where
// their int16 and int32 sums are largest: every code its largest (15,
// 31, 63), every scale and min its largest (Q6_K's 127 and −128), times
// activations all 127 or all −127, against the exact sum (terms of one
// sign: float rounding only); and Q6_K's batch kernel where there is one.
func TestKQuantExtremes(t *testing.T) {
	const cols, rows = 512, 3
	for _, ks := range blockSets() {
		for _, c := range []struct {
			typ gguf.Type
			sc  byte // Q6_K's scale bytes
		}{{gguf.Q4_K, 0}, {gguf.Q5_K, 0}, {gguf.Q6_K, 127}, {gguf.Q6_K, 0x80}} {
			bb := c.typ.BlockBytes()
			w := make([]byte, rows*cols/256*bb)
			for i := range w {
				w[i] = 0xff // codes, scales and mins at their largest
			}
			for b := 0; b < len(w); b += bb {
				if c.typ == gguf.Q6_K {
					for i := 192; i < 208; i++ {
						w[b+i] = c.sc
					}
					binary.LittleEndian.PutUint16(w[b+208:], 0x3c00) // d = 1
					continue
				}
				binary.LittleEndian.PutUint16(w[b:], 0x3c00) // d = 1
				binary.LittleEndian.PutUint16(w[b+2:], 0)    // dmin = 0
			}
			for _, x := range []int8{127, -127} {
				xq, ones, xsum := make([]int8, cols), make([]float32, cols/32), make([]float32, cols/32)
				for i := range xq {
					xq[i] = x
				}
				for i := range ones {
					ones[i] = 1
				}
				quantSums(xsum, ones, xq, i8Natural)
				bs := make([]int16, cols/16)
				sums16(bs, xq)
				out := make([]float32, rows)
				ks.gemvBlocksI8[blockI8Type(c.typ)](out, w, xq, ones, xsum, bs)
				want, mag := blockExact(c.typ, w, rows, xq, ones)
				for r, v := range out {
					if math.Abs(float64(v)-want[r]) > 1e-6*mag[r] {
						t.Fatalf("%s %s scales %#x, x = %d: row %d = %g, exact %g", ks.name, c.typ, c.sc, x, r, v, want[r])
					}
				}
				if c.typ != gguf.Q6_K || ks.gemmQ6K == nil {
					continue
				}
				// The batch kernel: two inputs all x, which quantise to x.
				m, err := newBlockMatrix(&engine.Tensor{Name: "w", Shape: []int{rows, cols}, DType: safetensors.U8, Data: w, Blocks: c.typ}, &ks)
				if err != nil {
					t.Fatal(err)
				}
				xf := make([]float32, 2*cols)
				for i := range xf {
					xf[i] = float32(x)
				}
				for i, v := range mulAll(&ks, m, xf, 2) {
					if r := i % rows; math.Abs(float64(v)-want[r]) > 1e-6*mag[r] {
						t.Fatalf("%s %s scales %#x, x = %d, batch: row %d = %g, exact %g", ks.name, c.typ, c.sc, x, r, v, want[r])
					}
				}
			}
		}
	}
}

// TestBlockBatch checks the batch product of every block type with int8
// batches on every int8 set, and its single-input product, against the
// exact product with x rounded as each rounds it (a step per 32, or per
// super-block for the k-quants of a set with quantK), for row counts
// that leave a partial panel. (Q6_K's batches are float in a set without
// gemmQ6K.)
func TestBlockBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const cols = 512
	for _, ks := range blockSets() {
		for _, typ := range i8BlockTypes {
			if typ == gguf.Q6_K && ks.gemmQ6K == nil {
				continue
			}
			for _, rows := range []int{16, 37} {
				w := randBlocks(rng, typ, rows, cols, false)
				m, err := newBlockMatrix(&engine.Tensor{Name: "w", Shape: []int{rows, cols}, DType: safetensors.U8, Data: w, Blocks: typ}, &ks)
				if err != nil {
					t.Fatal(err)
				}
				for _, n := range []int{2, 9, 23} {
					x := randF32(rng, n*cols)
					batched := mulAll(&ks, m, x, n)
					for b := range n {
						xb := x[b*cols : (b+1)*cols]
						single := mulAll(&ks, m, xb, 1)
						for _, c := range []struct {
							what  string
							got   []float32
							super bool
						}{{"batch", batched[b*rows : (b+1)*rows], false}, {"single input", single, m.layout().super}} {
							want, mag := roundedProduct(&ks, typ, w, rows, xb, c.super)
							for r, v := range c.got {
								if math.Abs(float64(v)-want[r]) > 1e-5*mag[r] {
									t.Fatalf("%s %s %d×%d, %d inputs, %s: row %d input %d = %g, exact %g", ks.name, typ, rows, cols, n, c.what, r, b, v, want[r])
								}
							}
						}
					}
				}
			}
		}
	}
}

// roundedProduct is blockExact of w with x rounded to int8 as ks rounds
// it: in blocks of 32 (quantI8), or with super one step per super-block
// (quantK).
func roundedProduct(ks *kernelSet, typ gguf.Type, w []byte, rows int, x []float32, super bool) (want, mag []float64) {
	cols := len(x)
	xq, dx, xsum := make([]int8, cols), make([]float32, cols/32), make([]float32, cols/32)
	if super {
		ks.quantK(xq, dx, xsum, x)
	} else {
		ks.quantI8(xq, dx, xsum, x, i8Natural)
	}
	return blockExact(typ, w, rows, xq, dx)
}

// TestBlockPanels checks the panels fillI8 lays out: that scale·code +
// bias is each weight as gguf.Dequantize gives it (Q6_K: the scale of
// its half of the chunk times the signed code), and that the assembly
// kernels of every set lay out whole panels exactly as the Go code does.
func TestBlockPanels(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const rows, cols = 32, 512
	goPanels := *envKernels(t) // fillI8 lays out its panels in Go
	goPanels.panelBlocksI8 = [blockI8Types]blockPanelI8{}
	goPanels.gemmSigned = nil // Q8_0's codes 128 up and Q4_0's unsigned, as gemmI8 takes them
	for _, typ := range i8BlockTypes {
		w := randBlocks(rng, typ, rows, cols, false)
		m, err := newBlockMatrix(&engine.Tensor{Name: "w", Shape: []int{rows, cols}, DType: safetensors.U8, Data: w, Blocks: typ}, &goPanels)
		if err != nil {
			t.Fatal(err)
		}
		want := newI8Panel(cols)
		m.fillI8(&want, 16, 16)
		row := make([]float32, cols)
		for r := range 16 {
			m.row(row, 16+r)
			for k, v := range row {
				c, code := k/32, want.w[(k/4*16+r)*4+k%4]
				got := want.s[c*16+r]*float32(code) + want.b[c*16+r]
				if typ == gguf.Q6_K {
					got = want.s[c*16+r] * float32(int8(code))
					if k%32 >= 16 {
						got = want.b[c*16+r] * float32(int8(code))
					}
				}
				if d := math.Abs(float64(got - v)); d > 1e-6*math.Abs(float64(want.s[c*16+r]))*256 {
					t.Fatalf("%s: row %d column %d: panel %g, dequantised %g", typ, r, k, got, v)
				}
			}
		}
		sets := blockSets()
		if len(sets) > 0 { // the amx set's panel kernels need AVX2 only
			sets = append(sets, tilePanelSets()...)
		}
		for _, ks := range sets {
			if f := ks.panelBlocksI8[blockI8Type(typ)]; f != nil {
				shift8, shift4 := ks.gemmSigned != nil && typ == gguf.Q8_0, ks.gemmSigned != nil && typ == gguf.Q4_0
				samePanel(t, ks.name+" "+typ.String(), f, w[16*m.rowBytes:], m.rowBytes, &want, shift8, shift4)
			}
		}
	}
}

// samePanel checks that the panel kernel f lays out sixteen rows of w as
// want, bit for bit; for the set's gemmSigned, with no bias, and with
// shift8 the codes 128 less (Q8_0's as the blocks hold them), with shift4
// 8 less (Q4_0's signed).
func samePanel(t *testing.T, what string, f blockPanelI8, w []byte, rowBytes int, want *i8Panel, shift8, shift4 bool) {
	t.Helper()
	signed := shift8 || shift4
	got := newI8Panel(len(want.w) / 16)
	f(&got, w, rowBytes)
	codes := panelCodes(&got)
	for i, c := range want.w {
		switch {
		case shift8:
			c ^= 0x80
		case shift4:
			c -= 8
		}
		if codes[i] != c {
			t.Fatalf("%s: code %d = %d, want %d (tiled %v)", what, i, codes[i], c, got.tiled)
		}
	}
	for i := range want.s {
		wb := want.b[i]
		if signed {
			wb = 0
		}
		if got.s[i] != want.s[i] || got.b[i] != wb {
			t.Fatalf("%s: scale, bias %d = %g, %g, want %g, %g", what, i, got.s[i], got.b[i], want.s[i], want.b[i])
		}
	}
}

// TestDequantQ6K checks the kernel sets' Q6_K dequantisation against
// gguf.Dequantize, bit for bit.
func TestDequantQ6K(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	w := randBlocks(rng, gguf.Q6_K, 1, 768, false)
	want := make([]float32, 768)
	if err := gguf.Dequantize(gguf.Q6_K, want, w); err != nil {
		t.Fatal(err)
	}
	for _, ks := range kernelSets {
		if ks.dequantQ6K == nil {
			continue
		}
		got := make([]float32, 768)
		ks.dequantQ6K(got, w)
		for i, v := range want {
			if math.Float32bits(got[i]) != math.Float32bits(v) {
				t.Fatalf("%s: weight %d = %g, want %g", ks.name, i, got[i], v)
			}
		}
	}
}
