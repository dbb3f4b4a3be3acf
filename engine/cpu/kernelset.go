package cpu

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/driftwoodlabs/driftwood/internal/half"
)

// kernelSet is one implementation of the vector kernels that the matrix,
// attention and MLP code calls. goKernels is the portable reference; amd64
// adds AVX2 and AVX-512 sets and their int8 forms, arm64 NEON ones
// (archKernels). Every set computes the same sums, in different orders,
// and exp to within 2 ulp.
type kernelSet struct {
	name string
	// gemvF32, gemvBF16 and gemvF16 set out[r] = w[r·cols:(r+1)·cols]·x
	// for every r < len(out), cols = len(x).
	gemvF32  func(out, w, x []float32)
	gemvBF16 func(out []float32, w []uint16, x []float32)
	gemvF16  func(out []float32, w []uint16, x []float32)
	// gemvT adds aᵀ·w to out: out[d] += Σ_t a[t]·w[t·len(out)+d].
	// gemvTF16 and gemvTBF16 do the same over 16-bit rows.
	gemvT     func(out, w, a []float32)
	gemvTF16  func(out []float32, w []uint16, a []float32)
	gemvTBF16 func(out []float32, w []uint16, a []float32)
	// gemvQ8_0 is gemvF32 and gemvTQ8_0 is gemvT over q8_0 rows: codes,
	// and one scale per engine.Q8Block of them (the attention over a q8_0
	// KV cache).
	gemvQ8_0  func(out []float32, codes []int8, scales, x []float32)
	gemvTQ8_0 func(out []float32, codes []int8, scales, a []float32)
	// scores4 and values4, where the set has them, are attention over a
	// 16-bit ([0] f16, [1] bf16) or q8_0 cache for four query heads of a
	// kv group at once, each row of the cache widened once for the four
	// (kv.go). hd is a multiple of 16.
	scores4   [2]func(out *float32, stride int, k *uint16, q *float32, rows, hd int)
	scores4Q8 func(out *float32, stride int, k *int8, scales, q *float32, rows, hd int)
	values4   [2]func(out *float32, v *uint16, a *float32, stride, rows, hd int)
	values4Q8 func(out *float32, v *int8, scales, a *float32, stride, rows, hd int)
	// gemvQ4 and gemvQ8 set out[r] to MLX affine row r times x, as
	// Σ_g (s·q+b)·x = Σ_g s·(q·x) + b·xsum[g], where xsum holds the sum of
	// each group of x. gemvQ4 reads x in nibble order (see permuteQ4).
	gemvQ4 func(out []float32, w []uint32, scales, biases halfVec, x, xsum []float32, group int)
	gemvQ8 func(out []float32, w []uint32, scales, biases halfVec, x, xsum []float32, group int)
	// gemvQ4I8 and gemvQ8I8, where the set has them, are gemvQ4 and
	// gemvQ8 over int8 activations (int8.go) that quantI8 prepared: xq,
	// and dx and xsum per block of int8Block; f is scratch of at least
	// len(xsum)+16 floats. A set without them multiplies in float.
	quantI8 func(xq []int8, dx, xsum, x []float32, order i8Order)
	// quantK, where the set has it, is quantI8 in natural order with one
	// step for each 256 of x (written to each of its eight chunks' dx),
	// for the set's k-quant kernels, which fold their scales into the
	// integer sums (blocks_i8.go).
	quantK func(xq []int8, dx, xsum, x []float32)
	// panelI8[bits/8] and gemmI8[bits/8], where the set has them, are the
	// batch product over int8 inputs (int8.go): panelI8 lays out up to
	// sixteen rows of affine weights, gemmI8 multiplies such a panel with
	// nt inputs of a transposed batch into tile[t·16+r].
	panelI8  [2]panelI8
	gemmI8   [2]gemmI8
	gemvQ4I8 func(out []float32, w []uint32, scales, biases halfVec, xq []int8, dx, xsum, f []float32, group int)
	gemvQ8I8 func(out []float32, w []uint32, scales, biases halfVec, xq []int8, dx, xsum, f []float32, group int)
	// gemvBlocksI8[blockI8Type(t)], where the set has it, is the int8
	// gemv over GGUF blocks of type t (blocks_i8.go).
	gemvBlocksI8 [blockI8Types]blockGemvI8
	// prefetches says that the int8 gemv kernels prefetch their rows
	// gemvAhead bytes ahead (ahead.go), a distance worth measuring.
	prefetches bool
	// q4Form, where the set's Q4_0 and Q4_1 kernels have two forms,
	// probes them and says which it chose and why (blocks_q4_amd64.go).
	q4Form func() string
	// panelBlocksI8, where the set has it, lays out whole panels of GGUF
	// blocks for gemmI8 (blockMatrix.fillI8): in i8Panel.w, or for the
	// amx set in tile order in i8Panel.a (i8Panel.tiled).
	panelBlocksI8 [blockI8Types]blockPanelI8
	// gemmQ6K, where the set has it, is gemmI8 for Q6_K's panels: signed
	// codes, p.s the scale of each chunk's first sixteen columns and p.b
	// that of its last sixteen, no bias. Without it Q6_K's batches go in
	// float.
	gemmQ6K gemmI8
	// gemmSigned, where the set has it, is gemmI8 for Q8_0's and Q4_0's
	// panels that its panelBlocksI8 lays out with the codes signed (Q4_0's
	// less 8) and no bias (the amx set); without it Q8_0's codes go up by
	// 128 for gemmI8[1], and Q4_0's bias is −8·d.
	gemmSigned gemmI8
	// gemmPairs, where the set has it, is gemmI8 for panels whose chunks
	// share their biases in pairs (0 and 1, 2 and 3, ...: affine groups
	// of 64 or more), which it adds once for each pair (the amx set).
	gemmPairs gemmI8
	// batch, where set, is how many tokens go through the model together
	// when Options.MaxBatch is 0, in place of defaultBatch (the amx set:
	// see amxKernels).
	batch int
	// swiglu sets gate[i] = silu(gate[i])·up[i].
	swiglu func(gate, up []float32)
	// expSum sets x[i] = exp(x[i]-m) and returns the sum; maxF32 is the
	// largest x[i] (len(x) > 0).
	expSum func(x []float32, m float32) float32
	maxF32 func(x []float32) float32
	// widenBF16 and widenF16 convert src to dst[:len(src)], and
	// narrowF16 back, rounding as half.F32ToF16 (the KV cache's f16).
	widenBF16 func(dst []float32, src []uint16)
	widenF16  func(dst []float32, src []uint16)
	narrowF16 func(dst []uint16, src []float32)
	// dequantQ4 and dequantQ8 expand rows of MLX affine weights to
	// scale·q + bias, q4 in nibble order: for rows r < n of kw weights,
	// row r's codes start at w[r·wstride] and its scales and biases at
	// index r·sstride, and it goes to dst[r·kw:(r+1)·kw]. They may
	// prefetch the four rows after.
	dequantQ4 func(dst []float32, kw int, w []uint32, wstride int, scales, biases halfVec, sstride, n, group int)
	dequantQ8 func(dst []float32, kw int, w []uint32, wstride int, scales, biases halfVec, sstride, n, group int)
	// dequantQ6K, where the set has it, is gguf.Dequantize for Q6_K: the
	// float path's rows and panels of it (blockMatrix.dequant).
	dequantQ6K func(dst []float32, src []byte)
	// gemm4 multiplies four rows with a batch stored input-minor: for
	// r < 4 and t < n, out[t·ldo+r] = Σ_{i<k} w[r·stride+i]·xT[i·np+t];
	// k = len(xT)/np, np a multiple of 16 and at least n.
	gemm4 func(out []float32, ldo, n int, w []float32, stride int, xT []float32, np int)
}

// kernelSets lists goKernels and every set this CPU runs, the float ones
// first; the last is the default.
var kernelSets = append([]kernelSet{goKernels}, archKernels()...)

// chooseKernels returns the kernel set Options.Kernels names: one this CPU
// runs, or "float", the fastest that keeps quantised weights' products in
// float (the reference the golden data was made with). "" defers to the
// environment: DRIFTWOOD_KERNELS names a set, DRIFTWOOD_NOSIMD=1 means
// the portable one, and unset means the fastest.
func chooseKernels(name string) (*kernelSet, error) {
	from := "kernels"
	if name == "" {
		name, from = os.Getenv("DRIFTWOOD_KERNELS"), "DRIFTWOOD_KERNELS"
		if os.Getenv("DRIFTWOOD_NOSIMD") == "1" {
			name = goKernels.name
		}
		if name == "" {
			return &kernelSets[len(kernelSets)-1], nil
		}
	}
	for i := len(kernelSets) - 1; i >= 0; i-- {
		if ks := &kernelSets[i]; ks.name == name || name == "float" && !ks.int8() {
			return ks, nil
		}
	}
	names := make([]string, len(kernelSets))
	for i, ks := range kernelSets {
		names[i] = ks.name
	}
	return nil, fmt.Errorf("%s: no kernel set %q on this CPU (it runs %s, or float)", from, name, strings.Join(names, ", "))
}

// DefaultKernels names the kernel set a backend with Options.Kernels ""
// uses (see chooseKernels) and whether it multiplies quantised weights
// with int8 activations: go; on amd64 avx2, avx512, avx2i8, avxvnni,
// avx512vnni, amx; on arm64 neon, neondot.
func DefaultKernels() (name string, int8 bool, err error) {
	ks, err := chooseKernels("")
	if err != nil {
		return "", false, err
	}
	return ks.name, ks.int8(), nil
}

// defaultBatch is how many tokens go through the model together when
// neither Options.MaxBatch nor the kernel set says.
const defaultBatch = 64

// maxBatch is the batch the set takes by default.
func (ks *kernelSet) maxBatch() int {
	if ks.batch > 0 {
		return ks.batch
	}
	return defaultBatch
}

// DefaultBatch is how many tokens of a prompt go through the model
// together on the kernel set New chooses by default (for doctor).
func DefaultBatch() (int, error) {
	ks, err := chooseKernels("")
	if err != nil {
		return 0, err
	}
	return ks.maxBatch(), nil
}

// DefaultQ4Form says which form of the Q4_0 and Q4_1 decode kernels the
// default kernel set chose by its probe, "" where they have one form
// (for doctor).
func DefaultQ4Form() string {
	if ks, err := chooseKernels(""); err == nil && ks.q4Form != nil {
		return ks.q4Form()
	}
	return ""
}

var goKernels = kernelSet{
	name:      "go",
	gemvF32:   gemvF32Go,
	gemvBF16:  gemvBF16Go,
	gemvF16:   gemvF16Go,
	gemvT:     gemvTGo,
	gemvTF16:  gemvTF16Go,
	gemvTBF16: gemvTBF16Go,
	gemvQ8_0:  gemvQ8_0Go,
	gemvTQ8_0: gemvTQ8_0Go,
	gemvQ4:    gemvQ4Go,
	gemvQ8:    gemvQ8Go,
	swiglu:    swigluGo,
	expSum:    expSumGo,
	maxF32:    maxGo,
	widenBF16: widenBF16Go,
	widenF16:  widenF16Go,
	narrowF16: narrowF16Go,
	dequantQ4: dequantQ4Go,
	dequantQ8: dequantQ8Go,
	gemm4:     gemm4Go,
}

// dotGo uses four accumulators so that the loop is not one long
// dependency chain.
func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func axpyGo(dst []float32, a float32, x []float32) {
	x = x[:len(dst)]
	for i := range dst {
		dst[i] += a * x[i]
	}
}

func gemvF32Go(out, w, x []float32) {
	cols := len(x)
	for r := range out {
		out[r] = dotGo(w[r*cols:(r+1)*cols], x)
	}
}

func gemvBF16Go(out []float32, w []uint16, x []float32) {
	cols := len(x)
	for r := range out {
		row := w[r*cols : (r+1)*cols]
		var s0, s1 float32
		i := 0
		for ; i+2 <= cols; i += 2 {
			s0 += half.BF16ToF32(row[i]) * x[i]
			s1 += half.BF16ToF32(row[i+1]) * x[i+1]
		}
		for ; i < cols; i++ {
			s0 += half.BF16ToF32(row[i]) * x[i]
		}
		out[r] = s0 + s1
	}
}

func gemvF16Go(out []float32, w []uint16, x []float32) {
	cols, tab := len(x), f16Table()
	for r := range out {
		row := w[r*cols : (r+1)*cols]
		var s0, s1 float32
		i := 0
		for ; i+2 <= cols; i += 2 {
			s0 += tab[row[i]] * x[i]
			s1 += tab[row[i+1]] * x[i+1]
		}
		for ; i < cols; i++ {
			s0 += tab[row[i]] * x[i]
		}
		out[r] = s0 + s1
	}
}

func gemvTGo(out, w, a []float32) {
	for t, v := range a {
		axpyGo(out, v, w[t*len(out):(t+1)*len(out)])
	}
}

// permuteQ4 reorders x for the q4 kernels. Packed q4 codes come in 16-byte
// chunks of 32 weights, byte i holding weight 2i in its low nibble and
// 2i+1 in its high one; the kernels widen a chunk's bytes and split the
// nibbles, so they want each chunk of x as its 16 even elements, then its
// 16 odd ones.
func permuteQ4(dst, x []float32) {
	for c := 0; c+32 <= len(x); c += 32 {
		xc, d := x[c:c+32], dst[c:c+32]
		for i := 0; i < 16; i++ {
			d[i], d[16+i] = xc[2*i], xc[2*i+1]
		}
	}
}

// q4Index is the position of element k of a row in nibble order.
func q4Index(k int) int { return k&^31 + k&31>>1 + k&1*16 }

func gemvQ4Go(out []float32, w []uint32, scales, biases halfVec, x, xsum []float32, group int) {
	cols := len(x)
	wpr, groups := cols/8, cols/group
	for r := range out {
		words := w[r*wpr : (r+1)*wpr]
		var sum float32
		for g := range groups {
			var qx float32
			for c := g * group; c < (g+1)*group; c += 32 {
				xc := x[c : c+32]
				for j, v := range words[c/8 : c/8+4] {
					lo, hi := xc[4*j:4*j+4], xc[16+4*j:16+4*j+4]
					qx += float32(v&15)*lo[0] + float32(v>>8&15)*lo[1] +
						float32(v>>16&15)*lo[2] + float32(v>>24&15)*lo[3] +
						float32(v>>4&15)*hi[0] + float32(v>>12&15)*hi[1] +
						float32(v>>20&15)*hi[2] + float32(v>>28)*hi[3]
				}
			}
			sum += scales.at(r*groups+g)*qx + biases.at(r*groups+g)*xsum[g]
		}
		out[r] = sum
	}
}

func gemvQ8Go(out []float32, w []uint32, scales, biases halfVec, x, xsum []float32, group int) {
	cols := len(x)
	wpr, groups := cols/4, cols/group
	for r := range out {
		words := w[r*wpr : (r+1)*wpr]
		var sum float32
		for g := range groups {
			var qx float32
			for i, v := range words[g*group/4 : (g+1)*group/4] {
				xx := x[g*group+4*i : g*group+4*i+4]
				qx += float32(v&255)*xx[0] + float32(v>>8&255)*xx[1] +
					float32(v>>16&255)*xx[2] + float32(v>>24)*xx[3]
			}
			sum += scales.at(r*groups+g)*qx + biases.at(r*groups+g)*xsum[g]
		}
		out[r] = sum
	}
}

func swigluGo(gate, up []float32) {
	up = up[:len(gate)]
	for i, g := range gate {
		gate[i] = g / (1 + float32(math.Exp(float64(-g)))) * up[i]
	}
}

func expSumGo(x []float32, m float32) float32 {
	var sum float32
	for i, v := range x {
		e := float32(math.Exp(float64(v - m)))
		x[i] = e
		sum += e
	}
	return sum
}

func widenBF16Go(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		dst[i] = half.BF16ToF32(h)
	}
}

func widenF16Go(dst []float32, src []uint16) {
	dst, tab := dst[:len(src)], f16Table()
	for i, h := range src {
		dst[i] = tab[h]
	}
}

func narrowF16Go(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] = half.F32ToF16(v)
	}
}

func dequantQ4Go(dst []float32, kw int, w []uint32, wstride int, scales, biases halfVec, sstride, n, group int) {
	for r := 0; r < n; r++ {
		d, words := dst[r*kw:(r+1)*kw], w[r*wstride:]
		for g := 0; g < kw/group; g++ {
			s, b := scales.at(r*sstride+g), biases.at(r*sstride+g)
			for c := g * group; c < (g+1)*group; c += 32 {
				dc := d[c : c+32]
				for j, v := range words[c/8 : c/8+4] {
					for k := 0; k < 4; k++ {
						dc[4*j+k] = s*float32(v>>(8*k)&15) + b
						dc[16+4*j+k] = s*float32(v>>(8*k+4)&15) + b
					}
				}
			}
		}
	}
}

func dequantQ8Go(dst []float32, kw int, w []uint32, wstride int, scales, biases halfVec, sstride, n, group int) {
	for r := 0; r < n; r++ {
		d, words := dst[r*kw:(r+1)*kw], w[r*wstride:]
		for g := 0; g < kw/group; g++ {
			s, b := scales.at(r*sstride+g), biases.at(r*sstride+g)
			for i, v := range words[g*group/4 : (g+1)*group/4] {
				dc := d[g*group+4*i : g*group+4*i+4]
				dc[0], dc[1] = s*float32(v&255)+b, s*float32(v>>8&255)+b
				dc[2], dc[3] = s*float32(v>>16&255)+b, s*float32(v>>24)+b
			}
		}
	}
}

func gemm4Go(out []float32, ldo, n int, w []float32, stride int, xT []float32, np int) {
	k := len(xT) / np
	for r := 0; r < 4; r++ {
		row := w[r*stride : r*stride+k]
		for t := 0; t < n; t++ {
			var s float32
			for i, v := range row {
				s += v * xT[i*np+t]
			}
			out[t*ldo+r] = s
		}
	}
}
