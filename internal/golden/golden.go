// Package golden reads the golden reference data of the test models in
// testdata/models (golden.json.gz, computed by an independent float64
// reference), for the tests of every backend and of the CLI, and holds
// the conformance check of the engine.Backend contract that every
// backend's tests call (CheckBackend), and makes a ChatML chat model from
// the test data (ChatMLModel).
package golden

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Models lists the test models, in the order of the test data's README.
var Models = []string{
	"tiny-f32", "tiny-bf16", "tiny-f16", "tiny-mlx-q4", "tiny-mlx-q8",
	"tiny-mlx-q4-g64", "tiny-untied-f32", "tiny-hd32-f32",
}

// QwenModels are the Qwen test models (Qwen3 with q/k norms, Qwen2 with
// q/k/v biases, Qwen3 quantised), for the backends that run them.
var QwenModels = []string{"tiny-qwen3-f32", "tiny-qwen2-f32", "tiny-qwen3-mlx-q4"}

// GGUFModels are the GGUF test files of testdata/gguf, written by
// bench/ggufgen with every tensor type Driftwood reads between them
// (tiny-mixed: tiny-f32's weights in F32, F16, BF16, Q4_0, Q4_1 and Q8_0
// in turn; tiny-kquants: a tiny-256 model in Q4_K, Q5_K, Q6_K and Q8_0),
// whose golden data testdata/gguf/reference.py computes; tiny-qwen2 and
// tiny-qwen3 are the Qwen test models in F16, Q8_0, Q4_1 and BF16 in turn.
var GGUFModels = []string{"tiny-mixed.gguf", "tiny-kquants.gguf", "tiny-qwen2.gguf", "tiny-qwen3.gguf"}

// Golden is one model's reference results.
type Golden struct {
	Model  string `json:"model"`
	Prompt struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	} `json:"prompt"`
	PromptLogits [][]float32 `json:"prompt_logits"`
	Greedy       struct {
		Tokens []int32 `json:"tokens"`
		Steps  []struct {
			ContextLen int          `json:"context_len"`
			Top5       [][2]float64 `json:"top5"`
		} `json:"steps"`
		LogitsAfterLastToken []float32 `json:"logits_after_last_token"`
	} `json:"greedy"`
	Rope struct {
		InvFreq []float64 `json:"inv_freq"`
	} `json:"rope"`
	Debug struct {
		FinalNormOut [][]float32 `json:"final_norm_out"`
	} `json:"debug"`
	Chat struct {
		Rendered      string       `json:"rendered"`
		IDs           []int32      `json:"ids"`
		NextTokenTop5 [][2]float64 `json:"next_token_top5"`
	} `json:"chat"`
}

// Dir is the absolute path of the repository's testdata/models folder.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "models")
}

// ModelDir is the folder of one test model, or the file of a GGUF one
// (GGUFModels).
func ModelDir(model string) string {
	if strings.HasSuffix(model, ".gguf") {
		return filepath.Join(Dir(), "..", "gguf", model)
	}
	return filepath.Join(Dir(), model)
}

// Load reads a test model's golden data.
func Load(model string) (*Golden, error) {
	path := filepath.Join(ModelDir(model), "golden.json.gz")
	if strings.HasSuffix(model, ".gguf") {
		path = strings.TrimSuffix(ModelDir(model), ".gguf") + ".golden.json.gz"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var g Golden
	if err := json.NewDecoder(z).Decode(&g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &g, nil
}
