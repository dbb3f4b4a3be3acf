package mlxbridge

import (
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestRefusesQwen: the MLX backend does not run Qwen's extra pieces yet,
// and says so before it looks for libmlxc (auto then takes the CPU).
func TestRefusesQwen(t *testing.T) {
	for _, name := range golden.QwenModels {
		m, err := engine.LoadModel(golden.ModelDir(name))
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(m, Options{Library: "/nonexistent/libmlxc.so"})
		m.Close()
		if err == nil || !strings.Contains(err.Error(), "CPU backend") {
			t.Errorf("%s: New = %v, want a refusal naming the CPU backend", name, err)
		}
	}
}
