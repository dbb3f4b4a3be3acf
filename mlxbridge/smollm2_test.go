package mlxbridge

import (
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestSmolLM2AgainstCPU runs the trained model's GGUF file (Q4_1 blocks,
// a Q8_0 embedding, llama.cpp's q/k order) on MLX against the CPU
// backend's float path, which is exact to a float64 reference: the
// chat prompt's logits at every position, then 24 greedy steps. Skipped
// without libmlxc or the model (scripts/fetch-smollm2.sh).
func TestSmolLM2AgainstCPU(t *testing.T) {
	requireLibrary(t)
	m, err := engine.LoadModel(golden.SmolLM2(t))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := New(m, Options{Device: "cpu", KVType: engine.KVF32})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cb := cpuBackend(t, &fixture{m: m, b: b})
	// The ChatML prompt of "What is the capital of France?" with the
	// template's default system message.
	ids := []int32{1, 9690, 198, 2683, 359, 253, 5356, 5646, 11173, 3365, 3511, 308, 34519, 28, 7018, 411, 407, 19712, 8182, 2, 198,
		1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198}
	vocab := m.Config.VocabSize
	mc, err := b.NewCache(128)
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	cc, err := cb.NewCache(128)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	got, want := forward(t, b, mc, ids, len(ids)*vocab), forward(t, cb, cc, ids, len(ids)*vocab)
	worst := maxDiff(got, want)
	if worst > cpuTol {
		t.Fatalf("the prompt's logits: max |Δ| vs CPU %.2g", worst)
	}
	next := engine.Argmax(want[len(want)-vocab:])
	for i := range 24 {
		got, want = forward(t, b, mc, []int32{next}, vocab), forward(t, cb, cc, []int32{next}, vocab)
		d := maxDiff(got, want)
		if d > cpuTol {
			t.Fatalf("greedy step %d: max |Δ| vs CPU %.2g", i, d)
		}
		worst = max(worst, d)
		next = engine.Argmax(want)
	}
	t.Logf("logits within %.2g of the CPU's float path", worst)
}
