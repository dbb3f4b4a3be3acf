package cpu

import (
	"math"
	"slices"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// incrementalTol, from testdata's README, bounds differences between two
// f32 computations of the same logits.
const incrementalTol = golden.IncrementalTol

type fixture struct {
	name string
	g    *golden.Golden
	m    *engine.Model
	b    *Backend
}

func load(t *testing.T, name string, opt Options) *fixture {
	t.Helper()
	g, err := golden.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.LoadModel(golden.ModelDir(name))
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(m, opt)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); m.Close() })
	return &fixture{name, g, m, b}
}

func (f *fixture) cache(t *testing.T) engine.Cache {
	c, err := f.b.NewCache(f.m.Config.MaxPositionEmbeddings)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var maxDiff = golden.MaxDiff

// int8Numerics are the tolerances of int8 activations on the quantised
// test models, from measurements (docs/RATIONALE.md, "Integer
// activations"): their largest logit error was 0.85-1.23 on logits up to
// ±10.5 (0.24-0.57 against the float path since the bias term meets the
// rounded activations, quantSums; the tolerances were not tightened),
// because these tiny random models magnify any perturbation —
// merely rounding the activations to bf16 (a quarter of int8's error)
// moves their logits by up to 0.35-0.53 — and greedy steps whose golden
// top two are up to 0.38 apart change. The kernels themselves are held to
// exact integer sums (TestInt8KernelsExact); the model-level cost is
// measured on the 1B-shaped models (BenchmarkInt8Quality).
var int8Numerics = golden.Numerics{Logit: 1.5, Incremental: 1.5, Tie: 0.5}

// numericsOn is what the kernel set ks is held to on a model m: int8
// activations meet its MLX affine weights, or its GGUF blocks that have
// int8 kernels.
func numericsOn(ks *kernelSet, m *engine.Model) golden.Numerics {
	if !ks.int8() {
		return golden.Float
	}
	if m.Config.Quantization != nil {
		return int8Numerics
	}
	for _, l := range m.Weights.Layers {
		for _, t := range []*engine.Tensor{&l.QProj, &l.KProj, &l.VProj, &l.OProj, &l.GateProj, &l.UpProj, &l.DownProj} {
			if blockI8Type(t.Blocks) >= 0 && ks.gemvBlocksI8[0] != nil {
				return int8Numerics
			}
		}
	}
	return golden.Float
}

// TestConformance runs the backend contract's conformance check (golden
// logits, greedy and incremental decoding, KV round trip, refused calls,
// Close) with every kernel set.
func TestConformance(t *testing.T) {
	withKernels(t, func(t *testing.T, ks *kernelSet) {
		golden.CheckBackendWithin(t, slices.Concat(golden.Models, golden.QwenModels, golden.GGUFModels), func(t *testing.T, m *engine.Model) engine.Backend {
			b, err := New(m, Options{KVType: engine.KVF32, Kernels: ks.name})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}, func(m *engine.Model) golden.Numerics { return numericsOn(ks, m) })
	})
}

// kvNumerics widens numerics by what a smaller KV cache type rounds: its
// keys and values carry 11 (f16), 8 (bf16) or about 7 (q8_0) significant
// bits, and the tiny random models' attention is peaked enough to turn
// that into logit errors of about half these (f16 0.016, bf16 and q8_0
// 0.14 at most on the float models); the prefill's and a decode step's
// keys differ in their last f32 bits, which rounding to the smaller type
// can turn into a whole step of it. The trained model's KLD is
// TestSmolLM2KVTypes'.
var kvNumerics = map[engine.KVType]golden.Numerics{
	engine.KVF16:  {Logit: 0.03, Incremental: 2e-3, Tie: 0.03},
	engine.KVBF16: {Logit: 0.3, Incremental: 1e-2, Tie: 0.3},
	engine.KVQ8:   {Logit: 0.3, Incremental: 0.05, Tie: 0.3},
}

// TestConformanceKVTypes runs the conformance check with each smaller KV
// cache type on the kernel set in use, on the models whose head_dim the
// type takes.
func TestConformanceKVTypes(t *testing.T) {
	ks := envKernels(t)
	for _, typ := range []engine.KVType{engine.KVF16, engine.KVBF16, engine.KVQ8} {
		t.Run(string(typ), func(t *testing.T) {
			golden.CheckBackendWithin(t, slices.Concat(golden.Models, golden.QwenModels, golden.GGUFModels), func(t *testing.T, m *engine.Model) engine.Backend {
				if typ == engine.KVQ8 && m.Config.HeadDim%engine.Q8Block != 0 {
					t.Skipf("q8_0 takes head_dim a multiple of %d, this model's is %d (New refuses it: TestKVTypeRefused)", engine.Q8Block, m.Config.HeadDim)
				}
				b, err := New(m, Options{KVType: typ})
				if err != nil {
					t.Fatal(err)
				}
				return b
			}, func(m *engine.Model) golden.Numerics {
				n, k := numericsOn(ks, m), kvNumerics[typ]
				return golden.Numerics{Logit: n.Logit + k.Logit, Incremental: n.Incremental + k.Incremental, Tie: n.Tie + k.Tie}
			})
		})
	}
}

func TestGoldenRope(t *testing.T) {
	for _, name := range []string{"tiny-f32", "tiny-hd32-f32"} {
		f := load(t, name, Options{})
		got := f.m.Config.InvFreq()
		for i, want := range f.g.Rope.InvFreq {
			if math.Abs(got[i]-want) > 1e-6*want {
				t.Errorf("%s: inv_freq[%d] = %g, want %g", name, i, got[i], want)
			}
		}
	}
}

// TestChunkedPrefill checks that small batches (and one thread) give the
// same logits as one batch on two threads.
func TestChunkedPrefill(t *testing.T) {
	one := load(t, "tiny-mlx-q4", Options{MaxBatch: 5, Threads: 1})
	two := load(t, "tiny-mlx-q4", Options{Threads: 2})
	vocab := one.m.Config.VocabSize
	ids := one.g.Prompt.IDs
	a, b := make([]float32, len(ids)*vocab), make([]float32, len(ids)*vocab)
	if err := one.b.Forward(one.cache(t), ids, a); err != nil {
		t.Fatal(err)
	}
	if err := two.b.Forward(two.cache(t), ids, b); err != nil {
		t.Fatal(err)
	}
	if d := maxDiff(a, b); d > incrementalTol {
		t.Errorf("batches of 5 vs one batch: max |Δ| = %.2g", d)
	}
}
