package mlxbridge

import (
	"slices"
	"strings"
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

// kvNumerics are the tolerances of the golden checks on a cache of each
// type: f32 is held to the float tolerances; the others add their
// rounding of every key and value (and, for f16 and bf16, of the queries,
// which the fused attention takes in the cache's type). Measured on MLX's
// CPU device over the test models, the largest |Δlogit| from the golden
// ones was 0.046 for f16, 0.37 for bf16 and 0.23 for q8_0; the bounds
// leave room for another device's order of sums, and a greedy step may
// take another token where the golden top two are within Tie.
var kvNumerics = map[engine.KVType]golden.Numerics{
	engine.KVF32:  golden.Float,
	engine.KVF16:  {Logit: 0.08, Incremental: golden.IncrementalTol, Tie: 0.16},
	engine.KVBF16: {Logit: 0.6, Incremental: golden.IncrementalTol, Tie: 1.2},
	engine.KVQ8:   {Logit: 0.4, Incremental: golden.IncrementalTol, Tie: 0.8},
}

// TestConformance runs the backend contract's conformance check (golden
// logits, greedy and incremental decoding, KV round trip, refused calls,
// Close) on MLX's CPU device for every KV cache type, over the Llama and
// the Qwen test models and the GGUF files (every block type). q8_0 needs
// a head_dim that is a multiple of 32: on the other models New must
// refuse it, saying so (and the first model, whose checks include the
// chat prompt, the refused calls and Close, is one with head_dim 32).
func TestConformance(t *testing.T) {
	requireLibrary(t)
	models := slices.Concat(golden.Models, golden.QwenModels, golden.GGUFModels)
	for _, kt := range engine.KVTypes {
		models := models
		if kt == engine.KVQ8 { // the first model's checks include the chat prompt, refused calls and Close
			models = slices.Concat([]string{"tiny-hd32-f32"}, slices.DeleteFunc(slices.Clone(models), func(m string) bool { return m == "tiny-hd32-f32" }))
		}
		t.Run(string(kt), func(t *testing.T) {
			golden.CheckBackendWithin(t, models, func(t *testing.T, m *engine.Model) engine.Backend {
				b, err := New(m, Options{Device: "cpu", KVType: kt})
				if kt == engine.KVQ8 && m.Config.HeadDim%32 != 0 {
					if err == nil || !strings.Contains(err.Error(), "kv_type q8_0 needs a head_dim that is a multiple of 32") {
						t.Fatalf("New with q8_0 on head_dim %d = %v, want a refusal", m.Config.HeadDim, err)
					}
					t.Skipf("q8_0 refused on head_dim %d, as it should be", m.Config.HeadDim)
				}
				if err != nil {
					t.Fatal(err)
				}
				if b.KVType() != kt {
					t.Fatalf("KVType() = %q, want %q", b.KVType(), kt)
				}
				return b
			}, func(*engine.Model) golden.Numerics { return kvNumerics[kt] })
		})
	}
}
