package mlxbridge

import (
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// Tolerances from testdata's README for float32 activations (which this
// backend keeps, also for bf16/f16 weights and scales).
const (
	logitTol       = golden.LogitTol
	incrementalTol = golden.IncrementalTol
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

var maxDiff = golden.MaxDiff

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
			golden.CheckGreedy(t, f.b, func() engine.Cache { return f.cache(t) }, f.g, f.m.Config.VocabSize)
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
