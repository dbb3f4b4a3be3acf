package engine_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

func TestLoadEveryTestModel(t *testing.T) {
	for _, name := range golden.Models {
		m, err := engine.LoadModel(golden.ModelDir(name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		c := m.Config
		want := []int32{501, 508, 509}
		if name == "tiny-untied-f32" {
			want = []int32{509} // written as a plain int there
		}
		if !slicesEqual(c.EOSTokenIDs, want) {
			t.Errorf("%s: eos ids %v, want %v", name, c.EOSTokenIDs, want)
		}
		untied := name == "tiny-untied-f32"
		if (m.Weights.LMHead.Name == "lm_head.weight") != untied {
			t.Errorf("%s: lm head bound to %s", name, m.Weights.LMHead.Name)
		}
		if q := m.Weights.Layers[0].QProj; strings.Contains(name, "mlx") != q.Quantized() {
			t.Errorf("%s: q_proj quantised = %v", name, q.Quantized())
		}
		m.Close()
	}
}

func slicesEqual(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// copyModel copies a test model into a temporary folder for corrupting.
func copyModel(t *testing.T, name string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(golden.ModelDir(name), f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, f), b, 0o644)
	}
	return dir
}

// rewrite replaces the model's weights with edit's result.
func rewrite(t *testing.T, dir string, edit func(map[string]*safetensors.Tensor)) {
	t.Helper()
	path := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	tensors := map[string]*safetensors.Tensor{}
	for n, tt := range f.Tensors {
		c := *tt
		c.Data = append([]byte(nil), tt.Data...)
		tensors[n] = &c
	}
	f.Close()
	edit(tensors)
	var list []safetensors.Tensor
	for _, tt := range tensors {
		list = append(list, *tt)
	}
	if err := safetensors.Write(path, nil, list); err != nil {
		t.Fatal(err)
	}
}

func editConfig(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "config.json")
	var m map[string]any
	b, _ := os.ReadFile(path)
	json.Unmarshal(b, &m)
	edit(m)
	b, _ = json.Marshal(m)
	os.WriteFile(path, b, 0o644)
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		reason string
		model  string
		break_ func(t *testing.T, dir string)
		want   []string
	}{
		{"a missing tensor is named with the file", "tiny-f32", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]*safetensors.Tensor) { delete(m, "model.layers.2.post_attention_layernorm.weight") })
		}, []string{"model.safetensors", "missing tensor model.layers.2.post_attention_layernorm.weight"}},
		{"a wrong shape is named with both shapes", "tiny-f32", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]*safetensors.Tensor) {
				w := m["model.layers.1.mlp.up_proj.weight"]
				w.Shape = []int{w.Shape[1], w.Shape[0]}
			})
		}, []string{"model.layers.1.mlp.up_proj.weight has shape [64 192], want [192 64]"}},
		{"an unsupported dtype is named", "tiny-f32", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]*safetensors.Tensor) { m["model.norm.weight"].DType = safetensors.I32 })
		}, []string{"model.norm.weight has dtype I32"}},
		{"a missing Qwen2 bias is named", "tiny-qwen2-f32", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]*safetensors.Tensor) { delete(m, "model.layers.1.self_attn.v_proj.bias") })
		}, []string{"missing tensor model.layers.1.self_attn.v_proj.bias (qwen2 has q/k/v biases)"}},
		{"a missing Qwen3 head norm is named", "tiny-qwen3-f32", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]*safetensors.Tensor) { delete(m, "model.layers.0.self_attn.k_norm.weight") })
		}, []string{"missing tensor model.layers.0.self_attn.k_norm.weight"}},
		{"missing quantisation biases are named", "tiny-mlx-q4", func(t *testing.T, dir string) {
			rewrite(t, dir, func(m map[string]*safetensors.Tensor) { delete(m, "model.layers.0.self_attn.k_proj.biases") })
		}, []string{"missing tensor model.layers.0.self_attn.k_proj.biases"}},
		{"quantised weights without a quantization key are refused", "tiny-mlx-q8", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { delete(m, "quantization") })
		}, []string{`config.json has no "quantization"`}},
		{"a group size that does not match the scales is refused", "tiny-mlx-q4-g64", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["quantization"] = map[string]any{"group_size": 32, "bits": 4} })
		}, []string{"group_size 32"}},
		{"a truncated weights file says so", "tiny-f16", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "model.safetensors")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)/2], 0o644)
		}, []string{"model.safetensors", "truncated"}},
		{"a missing config key names the file and key", "tiny-f32", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { delete(m, "num_hidden_layers") })
		}, []string{"config.json", `"num_hidden_layers": missing`}},
		{"inconsistent heads are refused", "tiny-f32", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["num_key_value_heads"] = 3 })
		}, []string{"config.json", "num_key_value_heads"}},
		{"a wrong type names the key", "tiny-f32", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["hidden_size"] = "64" })
		}, []string{"config.json", `"hidden_size": wrong type`}},
		{"other architectures are refused by name", "tiny-f32", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["architectures"] = []string{"MistralForCausalLM"} })
		}, []string{"MistralForCausalLM"}},
		{"an eos id outside the vocabulary is refused", "tiny-f32", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["eos_token_id"] = 9999 })
		}, []string{"eos_token_id", "9999"}},
		{"a bos id outside the vocabulary is refused", "tiny-f32", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["bos_token_id"] = 9999 })
		}, []string{"config.json", "bos_token_id", "9999"}},
		{"generation_config.json's eos ids are checked too", "tiny-f32", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id": [501, 512]}`), 0o644)
		}, []string{"generation_config.json", "eos_token_id", "512 is outside the vocabulary of 512"}},
		{"generation_config.json's bos id is checked too", "tiny-f32", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"bos_token_id": -1}`), 0o644)
		}, []string{"generation_config.json", "bos_token_id", "-1"}},
		{"layers that the weights do not hold are refused before any is allocated", "tiny-f32", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["num_hidden_layers"] = 1000 })
		}, []string{"config.json", "num_hidden_layers is 1000", "model.safetensors holds 3 layers"}},
		{"a context longer than any model is refused (2^62 panicked in growslice)", "tiny-f32", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["max_position_embeddings"] = 1 << 62 })
		}, []string{"config.json", `"max_position_embeddings": 4611686018427387904 is more than`}},
		{"a context of no positions is refused", "tiny-f32", func(t *testing.T, dir string) {
			editConfig(t, dir, func(m map[string]any) { m["max_position_embeddings"] = -5 })
		}, []string{"config.json", `"max_position_embeddings": missing or not positive`}},
		{"an oversized config.json is refused before it is read", "tiny-f32", func(t *testing.T, dir string) {
			sparse(t, filepath.Join(dir, "config.json"), 2<<20)
		}, []string{"config.json is larger than 1 MiB"}},
		{"an oversized generation_config.json is refused before it is read", "tiny-f32", func(t *testing.T, dir string) {
			sparse(t, filepath.Join(dir, "generation_config.json"), 2<<20)
		}, []string{"generation_config.json is larger than 1 MiB"}},
		{"a shard named .. is refused by name, not failed in mmap", "tiny-f32", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(`{"weight_map": {"model.norm.weight": ".."}}`), 0o644)
		}, []string{"model.safetensors.index.json", `shard name ".."`}},
		{"an oversized index is refused before it is read", "tiny-f32", func(t *testing.T, dir string) {
			sparse(t, filepath.Join(dir, "model.safetensors.index.json"), 17<<20)
		}, []string{"model.safetensors.index.json is larger than 16 MiB"}},
	}
	for _, c := range cases {
		dir := copyModel(t, c.model)
		c.break_(t, dir)
		m, err := engine.LoadModel(dir)
		if err == nil {
			m.Close()
			t.Errorf("%s: loaded without error", c.reason)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.reason, err, w)
			}
		}
	}
}

// sparse makes path a file of size zero bytes that takes no disk space.
func sparse(t *testing.T, path string, size int64) {
	t.Helper()
	if err := os.Truncate(path, 0); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

func TestParseConfigBounds(t *testing.T) {
	base := `"hidden_size": 8, "num_attention_heads": 2, "intermediate_size": 4, "vocab_size": 3, "max_position_embeddings": 16`
	for _, c := range []struct{ extra, want, reason string }{
		{`"num_hidden_layers": 100000000`, `"num_hidden_layers": 100000000 is more than Driftwood supports (1024)`, "1e8 layers ran the runtime out of memory"},
		{`"num_hidden_layers": 1, "head_dim": 4096`, `"head_dim": 4096`, "a head wider than any model is refused"},
		{`"num_hidden_layers": 1, "bos_token_id": 3`, `"bos_token_id": 3 is outside the vocabulary of 3`, "bos must name a token"},
		{`"num_hidden_layers": 1, "architectures": ["GemmaForCausalLM"]`, `"architectures": "GemmaForCausalLM" is not supported (Driftwood runs LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)`, "an unknown architecture is named with the known ones"},
		{`"num_hidden_layers": 1, "model_type": "gemma"`, `"model_type": "gemma" is not supported`, "an unknown model type too"},
		{`"num_hidden_layers": 1, "architectures": ["Qwen3ForCausalLM"], "model_type": "llama"`, `"model_type": "llama" does not match architectures "Qwen3ForCausalLM"`, "the two keys must agree"},
		{`"num_hidden_layers": 1, "architectures": ["MistralForCausalLM"], "sliding_window": 4096`, `"sliding_window": 4096: sliding-window attention is not implemented`, "Mistral 7B v0.1's window is refused"},
		{`"num_hidden_layers": 1, "architectures": ["Qwen2ForCausalLM"], "use_sliding_window": true`, `"use_sliding_window": sliding-window attention is not implemented`, "a Qwen window in use is refused"},
	} {
		_, err := engine.ParseConfig([]byte("{" + base + ", " + c.extra + "}"))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.reason, err, c.want)
		}
	}
}

func TestCheckVocabulary(t *testing.T) {
	m, err := engine.LoadModel(golden.ModelDir("tiny-f32")) // vocab_size 512
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.CheckVocabulary("tok.json", 512); err != nil {
		t.Errorf("a tokenizer the size of the vocabulary: %v", err)
	}
	if err := m.CheckVocabulary("tok.json", 300); err != nil {
		t.Errorf("an embedding padded past the tokenizer: %v", err)
	}
	// A vocabulary smaller than the tokenizer's ids failed only at run time,
	// as "cpu: token id 465 outside the vocabulary of 300".
	err = m.CheckVocabulary("tok.json", 128256)
	for _, want := range []string{"tok.json has 128256 tokens but the model has 512", "config.json", "model.embed_tokens.weight", "model.safetensors"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a tokenizer larger than the vocabulary: err = %v, want %q", err, want)
		}
	}
}

func TestTensorInTwoShards(t *testing.T) {
	dir := copyModel(t, "tiny-f32")
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	norm := *f.Tensors["model.norm.weight"]
	norm.Data = append([]byte(nil), norm.Data...)
	f.Close()
	if err := safetensors.Write(filepath.Join(dir, "extra.safetensors"), nil, []safetensors.Tensor{norm}); err != nil {
		t.Fatal(err)
	}
	idx := `{"weight_map": {"model.norm.weight": "extra.safetensors", "model.embed_tokens.weight": "model.safetensors"}}`
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), []byte(idx), 0o644)
	m, err := engine.LoadModel(dir)
	if err == nil {
		m.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "tensor model.norm.weight is stored twice") {
		t.Errorf("err = %v, want the tensor stored twice named", err)
	}
}

func TestShardedModel(t *testing.T) {
	dir := copyModel(t, "tiny-f32")
	src := filepath.Join(dir, "model.safetensors")
	f, err := safetensors.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	var a, b []safetensors.Tensor
	index := map[string]string{}
	for i, n := range f.Names() {
		tt := *f.Tensors[n]
		tt.Data = append([]byte(nil), tt.Data...)
		shard := "model-00001-of-00002.safetensors"
		if i%2 == 1 {
			shard = "model-00002-of-00002.safetensors"
			b = append(b, tt)
		} else {
			a = append(a, tt)
		}
		index[n] = shard
	}
	f.Close()
	os.Remove(src)
	safetensors.Write(filepath.Join(dir, "model-00001-of-00002.safetensors"), nil, a)
	safetensors.Write(filepath.Join(dir, "model-00002-of-00002.safetensors"), nil, b)
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": index})
	os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), idx, 0o644)
	m, err := engine.LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := len(m.WeightFiles()); got != 2 {
		t.Errorf("loaded %d files, want 2 shards", got)
	}
}

func FuzzParseConfig(f *testing.F) {
	b, _ := os.ReadFile(filepath.Join(golden.ModelDir("tiny-mlx-q4"), "config.json"))
	f.Add(b)
	f.Add([]byte(`{"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 4, "vocab_size": 3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := engine.ParseConfig(data)
		if err != nil {
			return
		}
		if c.HeadDim <= 0 || c.NumAttentionHeads%c.NumKeyValueHeads != 0 || c.VocabSize <= 0 {
			t.Fatalf("accepted an inconsistent config: %+v", c)
		}
	})
}

func TestFingerprintTellsModelsApart(t *testing.T) {
	seen := map[string]string{}
	for _, name := range golden.Models {
		m, err := engine.LoadModel(golden.ModelDir(name))
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := seen[m.Fingerprint]; dup {
			t.Errorf("%s and %s share a fingerprint", name, other)
		}
		seen[m.Fingerprint] = name
		again, _ := engine.LoadModel(golden.ModelDir(name))
		if again.Fingerprint != m.Fingerprint {
			t.Errorf("%s: fingerprint not stable", name)
		}
		again.Close()
		m.Close()
	}
}

// TestFingerprintSeesTheWeights: a copy of tiny-f32 with every
// *_proj.weight scaled by 1.5 and the header kept byte for byte (a
// fine-tune of the same shape) has another fingerprint. Before the
// fingerprint sampled the weights it hashed config.json and the headers
// only, and the copy shared the original's sessions and prefix-cache
// entries.
func TestFingerprintSeesTheWeights(t *testing.T) {
	base, err := engine.LoadModel(golden.ModelDir("tiny-f32"))
	if err != nil {
		t.Fatal(err)
	}
	defer base.Close()
	scaled, err := engine.LoadModel(golden.ScaledCopy(t, "tiny-f32", 1.5))
	if err != nil {
		t.Fatal(err)
	}
	defer scaled.Close()
	a, _ := safetensors.Open(filepath.Join(golden.ModelDir("tiny-f32"), "model.safetensors"))
	b, _ := safetensors.Open(filepath.Join(scaled.Dir, "model.safetensors"))
	defer a.Close()
	defer b.Close()
	if a.HeaderSHA256 != b.HeaderSHA256 {
		t.Fatal("the scaled copy's header differs: the test no longer tests the weights alone")
	}
	if base.Fingerprint == scaled.Fingerprint {
		t.Error("a copy with other weights of the same shape shares the model's fingerprint")
	}
}

// BenchmarkLoadModel loads the model folder $DRIFTWOOD_BENCH_MODEL (e.g.
// one written by `driftwood dev gen-model`), fingerprint included; the
// weights stay in the page cache between runs.
func BenchmarkLoadModel(b *testing.B) {
	dir := os.Getenv("DRIFTWOOD_BENCH_MODEL")
	if dir == "" {
		b.Skip("set DRIFTWOOD_BENCH_MODEL to a model folder")
	}
	for b.Loop() {
		m, err := engine.LoadModel(dir)
		if err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
}
