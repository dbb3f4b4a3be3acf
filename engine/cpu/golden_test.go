package cpu

import (
	"math"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// Tolerances from testdata's README: f32 arithmetic over the stored weights
// against the float64 reference.
const (
	logitTol       = golden.LogitTol
	incrementalTol = golden.IncrementalTol
)

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

func TestGoldenPromptLogits(t *testing.T) {
	for _, name := range golden.Models {
		t.Run(name, func(t *testing.T) {
			withKernels(t, func(t *testing.T) {
				f := load(t, name, Options{})
				vocab := f.m.Config.VocabSize
				ids := f.g.Prompt.IDs
				logits := make([]float32, len(ids)*vocab)
				if err := f.b.Forward(f.cache(t), ids, logits); err != nil {
					t.Fatal(err)
				}
				for p := range ids {
					if d := maxDiff(logits[p*vocab:(p+1)*vocab], f.g.PromptLogits[p]); d > logitTol {
						t.Errorf("position %d: max |Δlogit| = %.2g > %g", p, d, logitTol)
					}
				}
			})
		})
	}
}

// TestGoldenGreedy decodes 24 tokens one at a time through the KV cache and
// checks each token, each step's top-5 logits and the final logits; then
// runs the whole sequence again in one batch and checks that incremental
// decoding equals full recompute.
func TestGoldenGreedy(t *testing.T) {
	for _, name := range golden.Models {
		t.Run(name, func(t *testing.T) {
			withKernels(t, func(t *testing.T) {
				f := load(t, name, Options{})
				golden.CheckGreedy(t, f.b, func() engine.Cache { return f.cache(t) }, f.g, f.m.Config.VocabSize)
			})
		})
	}
}

func TestGoldenChatPrompt(t *testing.T) {
	f := load(t, "tiny-f32", Options{})
	logits := make([]float32, f.m.Config.VocabSize)
	if err := f.b.Forward(f.cache(t), f.g.Chat.IDs, logits); err != nil {
		t.Fatal(err)
	}
	golden.CheckTop5(t, logits, f.g.Chat.NextTokenTop5)
}

func TestGoldenRope(t *testing.T) {
	for _, name := range []string{"tiny-f32", "tiny-hd32-f32"} {
		f := load(t, name, Options{})
		got := InvFreq(f.m.Config)
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
