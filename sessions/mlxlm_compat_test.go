package sessions

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// fixtureIDs are the tokens the mlx-lm fixtures hold
// (testdata/mlxlm_fixtures.py).
var fixtureIDs = []int32{500, 367, 256, 305, 68, 286, 220, 264, 83}

// driftwoodKV is the model's KV state for ids on the CPU backend, kept
// in float32, and the model.
func driftwoodKV(t *testing.T, model string, ids []int32) (*engine.Model, *engine.KVState) {
	t.Helper()
	m, err := engine.LoadModel(golden.ModelDir(model))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	b, err := cpu.New(m, cpu.Options{Threads: 1, KVType: engine.KVF32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	c, err := b.NewCache(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Forward(c, ids, make([]float32, m.Config.VocabSize)); err != nil {
		t.Fatal(err)
	}
	kv, err := c.Export()
	if err != nil {
		t.Fatal(err)
	}
	return m, kv
}

// relDiff is the largest difference of got's values from want's, over
// want's largest magnitude.
func relDiff(got, want *engine.KVState) float64 {
	var diff, scale float64
	for l := range want.K {
		for _, p := range [][2][]byte{{got.K[l], want.K[l]}, {got.V[l], want.V[l]}} {
			g, w := f32s(p[0]), f32s(p[1])
			for i := range w {
				diff = max(diff, math.Abs(float64(g[i]-w[i])))
				scale = max(scale, math.Abs(float64(w[i])))
			}
		}
	}
	return diff / scale
}

// TestMLXLMFixtures opens prompt caches mlx-lm saved (both layouts,
// KVCache and QuantizedKVCache): Open refuses each, saying what it is,
// and OpenPromptCache reads the same state Driftwood computes for their
// tokens.
func TestMLXLMFixtures(t *testing.T) {
	for _, c := range []struct {
		file, model, class string
		// tol is of the largest value. mlx-lm runs an f16 model in f16,
		// and attends over a quantised cache while it fills it, so each
		// layer adds to the codes' error (4-bit: 8% of the largest value
		// in layer 0 by mlx's own dequantize, 25% by layer 2).
		tol float64
	}{
		{"mlxlm-new-f16", "tiny-f16", classKV, 0.01},
		{"mlxlm-new-q8", "tiny-hd32-f32", classQuant, 0.02},
		{"mlxlm-new-q4", "tiny-hd32-f32", classQuant, 0.3},
		{"mlxlm-old-f32", "tiny-f32", classKV, 1e-5},
		{"mlxlm-old-q8", "tiny-hd32-f32", classQuant, 0.02},
	} {
		path := filepath.Join("testdata", c.file+".safetensors")
		wantModel := "testdata/models/" + c.model
		for name, open := range map[string]func(string) error{
			"Open":     func(p string) error { _, err := Open(p); return err },
			"ReadMeta": func(p string) error { _, err := ReadMeta(p); return err },
		} {
			err := open(path)
			var fe *ForeignError
			if !errors.As(err, &fe) || fe.Model != wantModel || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "no token ids") {
				t.Errorf("%s: %s: %v, want a ForeignError for %s", c.file, name, err, wantModel)
			}
		}
		pc, err := OpenPromptCache(path)
		if err != nil {
			t.Errorf("%s: %v", c.file, err)
			continue
		}
		if pc.Class != c.class || pc.KV.Len != len(fixtureIDs) || pc.Metadata["model"] != wantModel || pc.Metadata["tokenizer_config"] != "{}" {
			t.Errorf("%s: %s of %d positions, metadata %v", c.file, pc.Class, pc.KV.Len, pc.Metadata)
		}
		m, want := driftwoodKV(t, c.model, fixtureIDs)
		if err := m.Config.ValidateKV(pc.KV, 64); err != nil {
			t.Errorf("%s: %v", c.file, err)
		} else if d := relDiff(pc.KV.Convert(engine.KVF32), want); d > c.tol {
			t.Errorf("%s: mlx-lm's state differs from Driftwood's by %.3g of the largest value, want at most %g", c.file, d, c.tol)
		}
		pc.Close()
	}
}

// mlxLM is the path of one of mlx-lm's commands, or skips the test when
// mlx-lm cannot be run.
func mlxLM(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs mlx-lm")
	}
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not on PATH: install mlx-lm (pip install mlx-lm), or activate the environment that has it, to check that mlx-lm reads Driftwood's sessions", name)
	}
	if out, err := exec.Command(path, "--help").CombinedOutput(); err != nil {
		t.Skipf("%s does not run (mlx-lm is not importable?): %v\n%s", name, err, out)
	}
	return path
}

// runMLX runs an mlx-lm command offline and returns its standard output.
func runMLX(t *testing.T, path string, args ...string) string {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "HF_HUB_OFFLINE=1", "TRANSFORMERS_VERBOSITY=error")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(path), strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// TestMLXLMContinuesSession saves sessions in every form for the tiny
// test models and has mlx_lm.generate --prompt-cache-file continue them:
// greedy decoding after the session's tokens and a prompt gives what
// mlx-lm gives for the whole text.
func TestMLXLMContinuesSession(t *testing.T) {
	gen := mlxLM(t, "mlx_lm.generate")
	const said, prompt, bos = "The tide is out and the boats rest on the sand", " and the gulls", "<|begin_of_text|>"
	dir := t.TempDir()
	reference := map[string]string{}
	for _, c := range []struct {
		model string
		typ   engine.KVType
		// n is the tokens compared: bf16's 8 significant bits part
		// from the reference after 7 of them on tiny-f32.
		n int
	}{
		{"tiny-f32", engine.KVF32, 12}, {"tiny-f32", engine.KVF16, 12}, {"tiny-f32", engine.KVBF16, 6},
		{"tiny-hd32-f32", engine.KVF32, 12}, {"tiny-hd32-f32", engine.KVQ8, 12},
	} {
		modelDir, err := filepath.Abs(golden.ModelDir(c.model))
		if err != nil {
			t.Fatal(err)
		}
		gen := func(args ...string) string {
			return runMLX(t, gen, append([]string{"--ignore-chat-template", "--max-tokens", strconv.Itoa(c.n), "--verbose", "False"}, args...)...)
		}
		ref := c.model + "/" + strconv.Itoa(c.n)
		if reference[ref] == "" {
			// mlx-lm adds a BOS to the prompt it encodes, so the whole
			// text has one before the prompt too.
			reference[ref] = gen("--model", modelDir, "--prompt", said+bos+prompt)
		}
		tok, err := tokenizer.Load(filepath.Join(modelDir, "tokenizer.json"))
		if err != nil {
			t.Fatal(err)
		}
		ids := tok.AddSpecialTokens(tok.Encode(said))
		_, kv := driftwoodKV(t, c.model, ids)
		meta, _ := sample(len(ids), 0)
		meta.Tokens, meta.ModelSource = ids, &ModelSource{Path: modelDir}
		path := filepath.Join(dir, c.model+"-"+string(c.typ)+".safetensors")
		if err := Save(path, meta, kv.Convert(c.typ)); err != nil {
			t.Fatal(err)
		}
		args := []string{"--prompt-cache-file", path, "--prompt", prompt}
		if c.typ == engine.KVQ8 {
			args = append(args, "--kv-group-size", "32") // mlx-lm's default is 64
		}
		if c.typ != engine.KVF32 {
			// The session names the model; mlx-lm then needs no --model,
			// and one given must be the same.
			args = append(args, "--model", modelDir)
		}
		if got := gen(args...); got != reference[ref] {
			t.Errorf("%s, %s session: mlx-lm continued it with %q, and the whole text with %q", c.model, c.typ, got, reference[ref])
		} else {
			t.Logf("%s, %s session: mlx-lm continues it with %q", c.model, c.typ, got)
		}
	}
}

// TestMLXLMCachePrompt has mlx_lm.cache_prompt save prompt caches, a
// KVCache and a QuantizedKVCache: Open refuses them, saying why, and
// OpenPromptCache reads them for the model.
func TestMLXLMCachePrompt(t *testing.T) {
	cachePrompt := mlxLM(t, "mlx_lm.cache_prompt")
	dir := t.TempDir()
	for _, c := range []struct {
		model, class string
		args         []string
	}{
		{"tiny-f32", classKV, nil},
		{"tiny-hd32-f32", classQuant, []string{"--kv-bits", "8", "--kv-group-size", "32", "--quantized-kv-start", "0"}},
	} {
		modelDir, err := filepath.Abs(golden.ModelDir(c.model))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, c.model+".safetensors")
		runMLX(t, cachePrompt, append([]string{"--model", modelDir, "--prompt", "The tide is out", "--prompt-cache-file", path}, c.args...)...)
		_, err = Open(path)
		if fe := (*ForeignError)(nil); !errors.As(err, &fe) || fe.Model != modelDir {
			t.Errorf("%s: Open: %v, want a ForeignError for %s", c.model, err, modelDir)
		}
		pc, err := OpenPromptCache(path)
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		m, err := engine.LoadModel(modelDir)
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Config.ValidateKV(pc.KV, 4096); err != nil || pc.Class != c.class || pc.KV.Len == 0 {
			t.Errorf("%s: %s of %d positions: %v", c.model, pc.Class, pc.KV.Len, err)
		}
		t.Logf("%s: mlx-lm's %s of %d positions read", c.model, pc.Class, pc.KV.Len)
		m.Close()
		pc.Close()
	}
}

// TestRecoverFixtureTokens recovers the tokens mlx-lm's fixtures hold from
// their values, on the models that made them.
func TestRecoverFixtureTokens(t *testing.T) {
	for file, model := range map[string]string{
		"mlxlm-new-f16": "tiny-f16", "mlxlm-new-q8": "tiny-hd32-f32", "mlxlm-new-q4": "tiny-hd32-f32",
		"mlxlm-old-f32": "tiny-f32", "mlxlm-old-q8": "tiny-hd32-f32",
	} {
		pc, err := OpenPromptCache(filepath.Join("testdata", file+".safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := engine.LoadModel(golden.ModelDir(model))
		if err != nil {
			t.Fatal(err)
		}
		b, err := cpu.New(m, cpu.Options{Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := b.RecoverTokens(pc.KV, nil)
		switch {
		case err != nil:
			t.Errorf("%s: %v", file, err)
		case !slices.Equal(rec.IDs, fixtureIDs):
			t.Errorf("%s: recovered %v, want %v", file, rec.IDs, fixtureIDs)
		default:
			t.Logf("%s: farthest %.2g of the values' size, runner-up at least %.3g times as far", file, rec.Dist, rec.Margin)
		}
		b.Close()
		m.Close()
		pc.Close()
	}
}
