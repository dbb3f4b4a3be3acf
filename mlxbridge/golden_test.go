package mlxbridge

import (
	"slices"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
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

// TestConformance runs the backend contract's conformance check (golden
// logits, greedy and incremental decoding, KV round trip, refused calls,
// Close) on MLX's CPU device, where float32 meets the tolerances, for the
// Llama and the Qwen test models and the GGUF files (every block type).
func TestConformance(t *testing.T) {
	requireLibrary(t)
	models := slices.Concat(golden.Models, golden.QwenModels, golden.GGUFModels)
	golden.CheckBackendWithin(t, models, func(t *testing.T, m *engine.Model) engine.Backend {
		b, err := New(m, Options{Device: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, func(*engine.Model) golden.Numerics { return golden.Float })
}
