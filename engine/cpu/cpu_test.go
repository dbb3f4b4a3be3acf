package cpu

import (
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/internal/half"
)

func TestF16Conversions(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := half.F16ToF32(h)
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := half.F32ToF16(f); back != h {
			t.Fatalf("f16 %#04x -> %g -> %#04x", h, f, back)
		}
	}
	cases := []struct {
		in   float32
		want uint16
	}{{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {1e6, 0x7c00}, {5.960464477539063e-08, 0x0001}, {1.0009765625 + 0.00048828125, 0x3c02}}
	for _, c := range cases {
		if got := half.F32ToF16(c.in); got != c.want {
			t.Errorf("half.F32ToF16(%g) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if got := half.F32ToBF16(1.00390625); got != 0x3f80 { // tie rounds to even
		t.Errorf("F32ToBF16 tie = %#04x", got)
	}
	if got := half.BF16ToF32(half.F32ToBF16(-3.5)); got != -3.5 {
		t.Errorf("bf16 round trip of -3.5 = %g", got)
	}
}

// TestDequantCheck compares dequantised rows with the golden data's
// dequant_check (first packed words, scales, biases, first group).
func TestDequantCheck(t *testing.T) {
	for _, name := range []string{"tiny-mlx-q4", "tiny-mlx-q8", "tiny-mlx-q4-g64"} {
		f := load(t, name, Options{})
		raw, err := os.Open(golden.ModelDir(name) + "/golden.json.gz")
		if err != nil {
			t.Fatal(err)
		}
		z, _ := gzip.NewReader(raw)
		var g struct {
			DequantCheck map[string]struct {
				Row0 []float32 `json:"dequantized_row0_first_group"`
			} `json:"dequant_check"`
		}
		if err := json.NewDecoder(z).Decode(&g); err != nil {
			t.Fatal(err)
		}
		raw.Close()
		mats := map[string]matrix{
			"model.embed_tokens.weight":              f.b.embed,
			"model.layers.0.self_attn.q_proj.weight": f.b.layers[0].qProj,
			"model.layers.2.mlp.down_proj.weight":    f.b.layers[2].downProj,
		}
		for tensor, want := range g.DequantCheck {
			m := mats[tensor]
			if m == nil {
				t.Fatalf("%s: no matrix for %s", name, tensor)
			}
			_, cols := m.dims()
			row := make([]float32, cols)
			m.row(row, 0)
			for j, w := range want.Row0 {
				if math.Abs(float64(row[j]-w)) > 1e-6 {
					t.Errorf("%s %s[0][%d] = %g, want %g", name, tensor, j, row[j], w)
				}
			}
		}
	}
}

// TestMatrixKernelsAgree checks, for every weight format, that the fused
// single-input kernel, the batched kernel and dequantise-then-dot agree.
func TestMatrixKernelsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, name := range golden.Models {
		f := load(t, name, Options{})
		for _, m := range []matrix{f.b.layers[1].qProj, f.b.layers[1].downProj, f.b.embed} {
			rows, cols := m.dims()
			const n = 3
			x := make([]float32, n*cols)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			batched := mulAll(f.b.ks, m, x, n)
			row := make([]float32, cols)
			for b := 0; b < n; b++ {
				single := mulAll(f.b.ks, m, x[b*cols:], 1)
				for r := 0; r < rows; r++ {
					m.row(row, r)
					want := dotGo(row, x[b*cols:])
					for _, got := range []float32{single[r], batched[b*rows+r]} {
						tol := 1e-4*(1+math.Abs(float64(want))) + int8Bound(m, r, row, x[b*cols:(b+1)*cols])
						if math.Abs(float64(got-want)) > tol {
							t.Fatalf("%s: row %d input %d: kernel %g, dequantised dot %g", name, r, b, got, want)
						}
					}
				}
			}
		}
	}
}

// mulAll multiplies m with n inputs through the kernels that Forward uses.
func mulAll(ks *kernelSet, m matrix, x []float32, n int) []float32 {
	rows, cols := m.dims()
	buf := newInputBuf(cols, n)
	var in input
	in.prepare(ks, &buf, x, n, cols, m.layout(), nil, nil)
	out := make([]float32, n*rows)
	s := newScratch(cols, n)
	if n == 1 {
		m.gemv(out, &in, 0, rows, s)
	} else {
		gemm(ks, m, out, &in, 0, rows, s)
	}
	return out
}

// TestKVExportImport checks what the conformance check cannot see, in
// every cache type: the exported layout against the cache's own blocks,
// and that continuing from an imported cache is bit-identical on this
// backend.
func TestKVExportImport(t *testing.T) {
	for _, typ := range engine.KVTypes {
		f := load(t, "tiny-hd32-f32", Options{KVType: typ})
		vocab := f.m.Config.VocabSize
		c := f.cache(t)
		ids := f.g.Prompt.IDs
		if err := f.b.Forward(c, ids, make([]float32, vocab)); err != nil {
			t.Fatal(err)
		}
		s, err := c.Export()
		if err != nil {
			t.Fatal(err)
		}
		if s.Type() != typ {
			t.Fatalf("%s cache exports a %q state", typ, s.Type())
		}
		// The exported layout is (kv_heads, len, head_dim): head 1's first
		// position follows head 0's last.
		native := c.(*cache)
		got := asF32(s.Convert(engine.KVF32).K[0])[len(ids)*32]
		if want := native.keyAt(0, 1, 0); got != want {
			t.Errorf("%s: head 1 position 0 = %g, want %g", typ, got, want)
		}
		restored := f.cache(t)
		if err := restored.Import(s); err != nil {
			t.Fatal(err)
		}
		a, b := make([]float32, vocab), make([]float32, vocab)
		next := f.g.Greedy.Tokens[0]
		f.b.Forward(c, []int32{next}, a)
		f.b.Forward(restored, []int32{next}, b)
		if d := maxDiff(a, b); d != 0 {
			t.Errorf("%s: continuing from an imported cache differs by %g", typ, d)
		}
	}
}

// keyAt is the key element 0 of kv head h at position p of a layer, as
// float32.
func (c *cache) keyAt(l, h, p int) float32 {
	blk, off := c.at(h, p)
	pl := &c.k[l]
	switch c.typ {
	case engine.KVF32:
		return pl.f[blk][off]
	case engine.KVF16:
		return half.F16ToF32(pl.h[blk][off])
	case engine.KVBF16:
		return half.BF16ToF32(pl.h[blk][off])
	}
	return float32(pl.q[blk][off]) * pl.s[blk][off/engine.Q8Block]
}

// TestShiftKVFirstLayer: the first layer's keys and values depend only on
// each token and its position, so after a context shift they must be
// those of a fresh prefill of the kept tokens (deeper layers saw the
// dropped ones, and differ), in every cache type to within its rounding.
func TestShiftKVFirstLayer(t *testing.T) {
	tol := map[engine.KVType]float64{engine.KVF32: 1e-5, engine.KVF16: 2e-3, engine.KVBF16: 2e-2, engine.KVQ8: 2e-2}
	for _, typ := range engine.KVTypes {
		f := load(t, "tiny-hd32-f32", Options{KVType: typ})
		vocab := f.m.Config.VocabSize
		ids := f.g.Prompt.IDs
		const start, drop = 3, 5
		full, fresh := f.cache(t), f.cache(t)
		if err := f.b.Forward(full, ids, make([]float32, vocab)); err != nil {
			t.Fatal(err)
		}
		kept := append(slices.Clone(ids[:start]), ids[start+drop:]...)
		if err := f.b.Forward(fresh, kept, make([]float32, vocab)); err != nil {
			t.Fatal(err)
		}
		s, err := full.Export()
		if err != nil {
			t.Fatal(err)
		}
		if s, err = f.m.Config.ShiftKV(s, start, drop, len(ids)-start-drop); err != nil {
			t.Fatal(err)
		}
		if err := full.Import(s); err != nil {
			t.Fatal(err)
		}
		got, _ := full.Export()
		want, _ := fresh.Export()
		got, want = got.Convert(engine.KVF32), want.Convert(engine.KVF32)
		for i, pair := range [][2][]byte{{got.K[0], want.K[0]}, {got.V[0], want.V[0]}} {
			a, b := asF32(pair[0]), asF32(pair[1])
			if d, m := maxDiff(a, b), maxAbs(b); len(a) != len(b) || float64(d) > tol[typ]*float64(m) {
				t.Errorf("%s: layer 0 %s after the shift: %d values, %d fresh, differing by up to %g of %g", typ, [2]string{"keys", "values"}[i], len(a), len(b), d, m)
			}
		}
		if d := maxDiff(asF32(got.K[1]), asF32(want.K[1])); d == 0 {
			t.Errorf("%s: layer 1's keys equal a fresh prefill's, as if the dropped tokens were never seen: the test proves nothing", typ)
		}
	}
}

// maxAbs is the largest |x[i]|.
func maxAbs(x []float32) float32 {
	var m float32
	for _, v := range x {
		m = max(m, float32(math.Abs(float64(v))))
	}
	return m
}

func TestThreadsAreBounded(t *testing.T) {
	m, err := engine.LoadModel(golden.ModelDir("tiny-f32"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	limit := MaxThreadsPerCPU * runtime.NumCPU()
	for _, n := range []int{-1, limit + 1, 100000} {
		b, err := New(m, Options{Threads: n})
		if err == nil {
			b.Close()
		}
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("threads %d: must be 0 (one per physical core) to %d", n, limit)) {
			t.Errorf("Threads %d: err = %v, want a refusal naming the limit (100000 goroutines made every step slow)", n, err)
		}
	}
	b, err := New(m, Options{Threads: limit})
	if err != nil {
		t.Fatalf("Threads %d (the limit): %v", limit, err)
	}
	b.Close()
}

func TestForwardAllocatesNothing(t *testing.T) {
	withKernels(t, func(t *testing.T, ks *kernelSet) {
		for _, act := range []string{ActivationsInt8, ActivationsInt8x2} {
			f := load(t, "tiny-mlx-q4", Options{Threads: 2, Kernels: ks.name, Activations: act})
			c := f.cache(t)
			logits := make([]float32, f.m.Config.VocabSize)
			f.b.Forward(c, f.g.Prompt.IDs, logits)
			if n := testing.AllocsPerRun(20, func() {
				c.Truncate(len(f.g.Prompt.IDs))
				f.b.Forward(c, []int32{7}, logits)
			}); n != 0 {
				t.Errorf("%s: a decode step allocated %v times", act, n)
			}
		}
	})
}

// oddMatrices builds, from random values, a matrix of every weight format
// with a shape the test models lack: rows not a multiple of four and more
// columns than one chunk of the batched kernel.
func oddMatrices(t *testing.T, rng *rand.Rand, rows, cols int, ks *kernelSet) map[string]matrix {
	vals := make([]float32, rows*cols)
	for i := range vals {
		vals[i] = float32(rng.NormFloat64())
	}
	bytesOf := func(n int, put func(b []byte, i int)) []byte {
		b := make([]byte, n)
		for i := range vals {
			put(b, i)
		}
		return b
	}
	dense := map[string]*engine.Tensor{
		"f32": {DType: safetensors.F32, Data: bytesOf(4*len(vals), func(b []byte, i int) {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(vals[i]))
		})},
		"bf16": {DType: safetensors.BF16, Data: bytesOf(2*len(vals), func(b []byte, i int) {
			binary.LittleEndian.PutUint16(b[2*i:], half.F32ToBF16(vals[i]))
		})},
		"f16": {DType: safetensors.F16, Data: bytesOf(2*len(vals), func(b []byte, i int) {
			binary.LittleEndian.PutUint16(b[2*i:], half.F32ToF16(vals[i]))
		})},
	}
	out := map[string]matrix{}
	for name, tt := range dense {
		tt.Name, tt.Shape = name, []int{rows, cols}
		m, err := newMatrix(tt, ks)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = m
		for _, bits := range []int{4, 8} {
			group := 32
			packed := make([]byte, rows*cols*bits/8)
			for i := range packed {
				packed[i] = byte(rng.Uint32())
			}
			groups := rows * cols / group
			aux := func() *engine.Tensor {
				return &engine.Tensor{DType: tt.DType, Shape: []int{rows, cols / group}, Data: tt.Data[:groups*len(tt.Data)/len(vals)]}
			}
			q := &engine.Tensor{Name: name, Shape: []int{rows, cols}, DType: safetensors.U32, Data: packed,
				Bits: bits, GroupSize: group, Scales: aux(), Biases: aux()}
			m, err := newMatrix(q, ks)
			if err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprintf("q%d with %s scales", bits, name)] = m
		}
	}
	for _, typ := range []gguf.Type{gguf.Q4_0, gguf.Q4_1, gguf.Q8_0, gguf.Q4_K, gguf.Q5_K, gguf.Q6_K} {
		if cols%typ.BlockSize() != 0 {
			continue
		}
		data, err := gguf.Quantize(typ, nil, vals)
		if err != nil {
			t.Fatal(err)
		}
		m, err := newMatrix(&engine.Tensor{Name: typ.String(), Shape: []int{rows, cols}, DType: safetensors.U8, Data: data, Blocks: typ}, ks)
		if err != nil {
			t.Fatal(err)
		}
		out["GGUF "+typ.String()] = m
	}
	named := map[string]matrix{}
	for name, m := range out {
		named[fmt.Sprintf("%s %d×%d", name, rows, cols)] = m
	}
	return named
}

// TestOddMatrices checks the single-input and batched products against
// dequantise-then-dot for shapes the test models lack, with every kernel
// set.
func TestOddMatrices(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	withKernels(t, func(t *testing.T, ks *kernelSet) {
		mats := oddMatrices(t, rng, 7, 1152, ks)
		maps.Copy(mats, oddMatrices(t, rng, 5, 1280, ks)) // whole k-quant blocks
		for name, m := range mats {
			rows, cols := m.dims()
			for _, n := range []int{1, 2, 50} {
				x := make([]float32, n*cols)
				for i := range x {
					x[i] = float32(rng.NormFloat64())
				}
				got := mulAll(ks, m, x, n)
				row := make([]float32, cols)
				for r := 0; r < rows; r++ {
					m.row(row, r)
					for b := 0; b < n; b++ {
						want := dotGo(row, x[b*cols:])
						var mag float64 // Σ|terms|: the scale of rounding errors
						for i, w := range row {
							mag += math.Abs(float64(w * x[b*cols+i]))
						}
						tol := 1e-5*mag + int8Bound(m, r, row, x[b*cols:(b+1)*cols])
						if d := math.Abs(float64(got[b*rows+r] - want)); d > tol {
							t.Fatalf("%s, %d inputs: row %d input %d: kernel %g, dequantised dot %g", name, n, r, b, got[b*rows+r], want)
						}
					}
				}
			}
		}
	})
}

// TestCacheBlocks runs the golden prompt and continuation through caches
// of small blocks, so that attention, export and import cross block
// boundaries, and checks them against the default cache.
func TestCacheBlocks(t *testing.T) {
	f := load(t, "tiny-mlx-q4", Options{MaxBatch: 8})
	vocab := f.m.Config.VocabSize
	ids := append(append([]int32(nil), f.g.Prompt.IDs...), f.g.Greedy.Tokens...)
	run := func(c engine.Cache, ids []int32) []float32 {
		logits := make([]float32, len(ids)*vocab)
		if err := f.b.Forward(c, ids, logits); err != nil {
			t.Fatal(err)
		}
		return logits
	}
	want := run(f.cache(t), ids)
	small := f.cache(t).(*cache)
	small.block = 5
	half := len(ids) / 2
	got := run(small, ids[:half])
	s, err := small.Export()
	if err != nil {
		t.Fatal(err)
	}
	restored := f.cache(t).(*cache)
	restored.block = 3
	if err := restored.Import(s); err != nil {
		t.Fatal(err)
	}
	got = append(got, run(restored, ids[half:])...)
	if d := maxDiff(got, want); d > incrementalTol {
		t.Errorf("blocks of 5 and 3 positions vs the default: max |Δ| = %.2g", d)
	}
}
