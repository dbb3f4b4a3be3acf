package cpu

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// llamaCppGreedy is testdata/smollm2/greedy-llamacpp.json.gz: llama.cpp's
// greedy continuations of 20 chat prompts on the trained SmolLM2 file,
// every step's top two logits, and the exact logits of each step's
// likeliest tokens from an independent float64 forward pass
// (testdata/smollm2/reference.py, numpy over gguf-py's dequantised
// weights).
type llamaCppGreedy struct {
	Model, SHA256, Reference string
	Prompts                  []struct {
		IDs    []int32 `json:"ids"`
		Greedy []int32 `json:"greedy"`
		// Steps are llama.cpp's [top1, logit1, top2, logit2] at each step.
		Steps [][4]float64 `json:"steps"`
		// Exact are each step's [token, logit] pairs, float64.
		Exact [][][2]float64 `json:"exact"`
	} `json:"prompts"`
}

// nearTie is the margin under which two tokens' order may differ between
// Driftwood's float path and llama.cpp: llama.cpp rounds the activations
// to 8 bits for its quantised products (Q8_1 for Q4_1), which moves this
// model's logits by 0.25 on average and up to 1.5 from the exact ones.
const nearTie = 0.5

// TestSmolLM2 runs a trained model (SmolLM2-135M-Instruct, Q4_1 GGUF) on
// 20 chat prompts and llama.cpp's 64-token greedy continuation of each,
// fed whole (so that one near-tie does not end the comparison), on the
// float path and, where the CPU has them, the int8 kernels:
//   - the float path's logits are the exact ones (within 1e-3 of the
//     float64 reference) for every step's likeliest tokens; int8's are
//     as close as llama.cpp's own (which rounds the activations to 8 bits
//     as well): their mean error at most 1.25 times llama.cpp's, none off
//     by more than llama.cpp's worst;
//   - both pick llama.cpp's token at every step but near-ties: the two
//     picks within nearTie of each other in the exact logits, and
//     llama.cpp's top two within nearTie plus what its int8 rounding
//     moved those two (a margin of 0.56 there was 0.13 exactly: its own
//     rounding had widened it). Each is logged with both engines'
//     logits.
func TestSmolLM2(t *testing.T) {
	path := golden.SmolLM2(t)
	if testing.Short() {
		t.Skip("-short: the 20 × 64 steps on the float path take a while")
	}
	ref := readLlamaCppGreedy(t)
	m, err := engine.LoadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sets := []string{"float"}
	if i8 := kernelSets[len(kernelSets)-1]; i8.gemvBlocksI8[0] != nil {
		sets = append(sets, i8.name)
	}
	for _, name := range sets {
		t.Run(name, func(t *testing.T) {
			b, err := New(m, Options{KVType: engine.KVF32, Kernels: name})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			checkSmolLM2(t, b, ref, m.Config.VocabSize, name == "float")
		})
	}
}

func checkSmolLM2(t *testing.T, b *Backend, ref *llamaCppGreedy, vocab int, float bool) {
	steps, ties, logits := 0, 0, 0
	var errSum, errMax, refSum, refMax float64 // |logit − exact|: here, and llama.cpp's
	for pi, p := range ref.Prompts {
		seq := append(append([]int32(nil), p.IDs...), p.Greedy[:len(p.Greedy)-1]...)
		cache, err := b.NewCache(len(seq))
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, len(seq)*vocab)
		if err := b.Forward(cache, seq, out); err != nil {
			t.Fatal(err)
		}
		cache.Close()
		for k, st := range p.Steps {
			row := out[(len(p.IDs)-1+k)*vocab:][:vocab]
			exact := map[int32]float64{}
			for _, e := range p.Exact[k] {
				exact[int32(e[0])] = e[1]
				d := math.Abs(float64(row[int32(e[0])]) - e[1])
				errSum, errMax, logits = errSum+d, max(errMax, d), logits+1
				if float && d > 1e-3 {
					t.Errorf("prompt %d step %d: logit of %d is %.5f, exactly %.5f", pi, k, int32(e[0]), row[int32(e[0])], e[1])
				}
			}
			steps++
			top, want := engine.Argmax(row), int32(st[0])
			if e, ok := exact[want]; ok {
				refSum, refMax = refSum+math.Abs(e-st[1]), max(refMax, math.Abs(e-st[1]))
			}
			if top == want {
				continue
			}
			e, ok := exact[top]
			lcErr := math.Abs(st[1] - exact[want]) // llama.cpp's rounding of its top two
			if e2, ok2 := exact[int32(st[2])]; ok2 {
				lcErr += math.Abs(st[3] - e2)
			}
			if ok && st[1]-st[3] < nearTie+lcErr && math.Abs(e-exact[want]) < nearTie {
				ties++
				t.Logf("prompt %d step %d: a near-tie: llama.cpp %d (%.3f) over %d (%.3f); here %d (%.3f) over %d (%.3f)",
					pi, k, want, st[1], int32(st[2]), st[3], top, row[top], want, row[want])
				continue
			}
			t.Errorf("prompt %d step %d: picks %d (%.3f), llama.cpp %d (%.3f here, %.3f there; its second %d at %.3f)",
				pi, k, top, row[top], want, row[want], st[1], int32(st[2]), st[3])
		}
	}
	mean, refMean := errSum/float64(logits), refSum/float64(steps)
	t.Logf("%d steps of %d prompts: logits off the exact ones by %.2g on average, %.2g at most (llama.cpp's top token: %.2g, %.2g); %d near-ties gone the other way from llama.cpp",
		steps, len(ref.Prompts), mean, errMax, refMean, refMax, ties)
	if !float && (mean > 1.25*refMean || errMax > refMax) {
		t.Errorf("int8 logits off the exact ones by %.3g on average and %.3g at most; llama.cpp's by %.3g and %.3g", mean, errMax, refMean, refMax)
	}
}

func readLlamaCppGreedy(t *testing.T) *llamaCppGreedy {
	t.Helper()
	f, err := os.Open("../../testdata/smollm2/greedy-llamacpp.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var ref llamaCppGreedy
	if err := json.NewDecoder(z).Decode(&ref); err != nil {
		t.Fatal(err)
	}
	return &ref
}

// kvKLDGoal is the mean KLD against the f32 cache each smaller KV type is
// held to (issue 29's goals, as llama.cpp's KV types are judged).
var kvKLDGoal = map[engine.KVType]float64{engine.KVF16: 0.001, engine.KVBF16: 0.001, engine.KVQ8: 0.005}

// TestSmolLM2KVTypes runs the trained model over the first 1,024 tokens
// of testdata/quality-text.md.gz with an f32 KV cache and with each
// smaller type, in lockstep chunks of 64, on the float kernels: the
// mean KLD of each type's next-token distribution against the f32
// cache's must meet kvKLDGoal.
func TestSmolLM2KVTypes(t *testing.T) {
	path := golden.SmolLM2(t)
	if testing.Short() {
		t.Skip("-short: 1,024 tokens through the model in four cache types take a while")
	}
	// On the float kernels: with int8 activations, any perturbation of
	// the attention flips some roundings of the next products' inputs,
	// and the two runs then differ by the int8 path's own noise (a KLD of
	// about 0.004 whatever the cache type), which says nothing of the
	// cache.
	m, ids := modelText(t, path, "", 1024)
	defer m.Close()
	vocab := m.Config.VocabSize
	types := []engine.KVType{engine.KVF32, engine.KVF16, engine.KVBF16, engine.KVQ8}
	caches := make([]engine.Cache, len(types))
	backends := make([]*Backend, len(types))
	for i, typ := range types {
		b, err := New(m, Options{KVType: typ, Kernels: "float"})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		if caches[i], err = b.NewCache(len(ids)); err != nil {
			t.Fatal(err)
		}
		backends[i] = b
	}
	const chunk = 64
	logits := make([][]float32, len(types))
	for i := range logits {
		logits[i] = make([]float32, chunk*vocab)
	}
	sum := make([]float64, len(types))
	for p := 0; p < len(ids); p += chunk {
		for i, b := range backends {
			if err := b.Forward(caches[i], ids[p:p+chunk], logits[i]); err != nil {
				t.Fatal(err)
			}
		}
		for r := range chunk {
			ref := logits[0][r*vocab : (r+1)*vocab]
			for i := 1; i < len(types); i++ {
				kl, _ := klDivergence(ref, logits[i][r*vocab:(r+1)*vocab])
				sum[i] += kl
			}
		}
	}
	for i := 1; i < len(types); i++ {
		mean := sum[i] / float64(len(ids))
		t.Logf("kv %s: mean KLD %.2g against the f32 cache over %d tokens (goal ≤ %g)", types[i], mean, len(ids), kvKLDGoal[types[i]])
		if mean > kvKLDGoal[types[i]] {
			t.Errorf("kv %s: mean KLD %.3g > %g", types[i], mean, kvKLDGoal[types[i]])
		}
	}
}
