package mlxbridge

import (
	"math"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// Tolerances from testdata's README for float32 activations (which this
// backend keeps, also for bf16/f16 weights and scales).
const (
	logitTol       = 1e-3
	incrementalTol = 1e-4
)

// requireLibrary skips the test when libmlxc is not found the way
// `driftwood doctor` finds it (CI has no library).
func requireLibrary(t testing.TB) {
	t.Helper()
	if _, err := (mlxc.Search{}).Find(); err != nil {
		t.Skipf("MLX tests skipped: %v", err)
	}
}

type fixture struct {
	g *golden.Golden
	m *engine.Model
	b *Backend
}

func load(t testing.TB, name string, opt Options) *fixture {
	t.Helper()
	requireLibrary(t)
	g, err := golden.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := engine.LoadModel(golden.ModelDir(name))
	if err != nil {
		t.Fatal(err)
	}
	if opt.Device == "" {
		opt.Device = "cpu" // f32 on MLX's CPU device everywhere, for the tolerances
	}
	b, err := New(m, opt)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close(); m.Close() })
	return &fixture{g, m, b}
}

func (f *fixture) cache(t testing.TB) engine.Cache {
	c, err := f.b.NewCache(f.m.Config.MaxPositionEmbeddings)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func maxDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

func TestGoldenPromptLogits(t *testing.T) {
	for _, name := range golden.Models {
		t.Run(name, func(t *testing.T) {
			f := load(t, name, Options{})
			vocab := f.m.Config.VocabSize
			ids := f.g.Prompt.IDs
			logits := make([]float32, len(ids)*vocab)
			if err := f.b.Forward(f.cache(t), ids, logits); err != nil {
				t.Fatal(err)
			}
			var worst float64
			for p := range ids {
				d := maxDiff(logits[p*vocab:(p+1)*vocab], f.g.PromptLogits[p])
				if d > logitTol {
					t.Errorf("position %d: max |Δlogit| = %.2g > %g", p, d, logitTol)
				}
				worst = max(worst, d)
			}
			t.Logf("max |Δlogit| over %d positions: %.2g", len(ids), worst)
		})
	}
}

// TestGoldenGreedy decodes 24 tokens one at a time through the KV cache,
// checking each token, each step's top-5 logits and the final logits, then
// checks incremental decoding against a full recompute in one batch.
func TestGoldenGreedy(t *testing.T) {
	for _, name := range golden.Models {
		t.Run(name, func(t *testing.T) {
			f := load(t, name, Options{})
			vocab := f.m.Config.VocabSize
			c := f.cache(t)
			logits := make([]float32, vocab)
			if err := f.b.Forward(c, f.g.Prompt.IDs, logits); err != nil {
				t.Fatal(err)
			}
			var incremental [][]float32
			for k, want := range f.g.Greedy.Tokens {
				incremental = append(incremental, append([]float32(nil), logits...))
				for _, top := range f.g.Greedy.Steps[k].Top5 {
					if d := math.Abs(float64(logits[int(top[0])]) - top[1]); d > logitTol {
						t.Errorf("step %d: logit of %d off by %.2g", k, int(top[0]), d)
					}
				}
				if got := engine.Argmax(logits); got != want {
					t.Fatalf("step %d: greedy token %d, want %d", k, got, want)
				}
				if err := f.b.Forward(c, []int32{want}, logits); err != nil {
					t.Fatal(err)
				}
			}
			if d := maxDiff(logits, f.g.Greedy.LogitsAfterLastToken); d > logitTol {
				t.Errorf("logits after the last token: max |Δ| = %.2g", d)
			}
			incremental = append(incremental, logits)

			all := append(append([]int32(nil), f.g.Prompt.IDs...), f.g.Greedy.Tokens...)
			full := make([]float32, len(all)*vocab)
			if err := f.b.Forward(f.cache(t), all, full); err != nil {
				t.Fatal(err)
			}
			p0 := len(f.g.Prompt.IDs) - 1
			for k, inc := range incremental {
				if d := maxDiff(inc, full[(p0+k)*vocab:(p0+k+1)*vocab]); d > incrementalTol {
					t.Errorf("step %d: incremental vs full recompute max |Δ| = %.2g > %g", k, d, incrementalTol)
				}
			}
		})
	}
}

func TestGoldenChatPrompt(t *testing.T) {
	f := load(t, "tiny-f32", Options{})
	logits := make([]float32, f.m.Config.VocabSize)
	if err := f.b.Forward(f.cache(t), f.g.Chat.IDs, logits); err != nil {
		t.Fatal(err)
	}
	for _, top := range f.g.Chat.NextTokenTop5 {
		if d := math.Abs(float64(logits[int(top[0])]) - top[1]); d > logitTol {
			t.Errorf("logit of %d off by %.2g", int(top[0]), d)
		}
	}
}
