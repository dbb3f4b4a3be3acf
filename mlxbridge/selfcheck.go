package mlxbridge

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// TrustEnvVar names the environment variable that, set to 1, makes
// Driftwood use an mlx-c newer than every release it knows without the
// self-check, at the user's own risk: a function whose signature changed
// is then memory corruption, not an error.
const TrustEnvVar = "DRIFTWOOD_MLXC_TRUST"

// SelfCheckReport says what a passed self-check compared.
type SelfCheckReport struct {
	// Device is the MLX device it ran on: "gpu" or "cpu".
	Device string
	// Compared counts the logits and cache values compared.
	Compared int
	// MaxDiff is the largest difference found, relative to the
	// reference's magnitude where that is above 1.
	MaxDiff float64
	// Took is the check's time, both backends included.
	Took time.Duration
}

func (r *SelfCheckReport) String() string {
	return fmt.Sprintf("passed on mlx (%s): %d values within %.1g of the cpu backend's (largest difference %.2g) in %s",
		r.Device, r.Compared, selfCheckTolerance, r.MaxDiff, r.Took.Round(time.Millisecond))
}

// selfCheckTolerance bounds the difference from the CPU backend's float
// kernels; both compute in float32, so only the order of sums differs.
const selfCheckTolerance = 1e-3

// SelfCheck runs a small fixed model through every function the backend
// binds, on the device New would pick, and compares the results with the
// reference backend's (the CPU backend with its float kernels, made by
// ref): matmul (a bf16 output layer), quantized_matmul at 4 bits (layer 0)
// and 8 bits (layer 1), dequantize and take (a 4-bit embedding), rms_norm,
// rope with llama3 frequencies, SDPA causal over the whole prompt, over
// a chunk after it and without a mask for one token, the cache's slicing
// and growth (a prompt crossing a growth step), its export and import;
// then, for each other KV cache type (f16, bf16, q8_0), the prompt on a
// cache of that type, within kvSelfCheckTolerance of the reference, and
// its export imported into a new cache that decodes as the first does
// (astype, view, quantize, softmax and quantized_matmul both ways for
// q8_0); and, where the library can wrap memory, sampling on the device
// against the engine's Sampler (checkPick). ref must make a backend
// whose caches are float32.
//
// # Errors
//
// The first step whose results disagree, or the MLX error of a failed
// call, as a *SelfCheckError.
func SelfCheck(opt Options, ref func(*engine.Model) (engine.Backend, error)) (*SelfCheckReport, error) {
	start := time.Now()
	m, err := selfCheckModel()
	if err != nil {
		return nil, err
	}
	fail := func(step string, err error) (*SelfCheckReport, error) {
		return nil, &SelfCheckError{Step: step, Err: err}
	}
	if opt.lib == nil {
		lib, err := open(opt.Library)
		if err != nil {
			return nil, err
		}
		opt.lib = lib
	}
	// A check of this process alone, held to the float reference's
	// tolerance.
	opt.checked, opt.Group, opt.KVType = true, nil, engine.KVF32
	mb, err := New(m, opt)
	if err != nil {
		return fail("loading the model", err)
	}
	defer mb.Close()
	cb, err := ref(m)
	if err != nil {
		return nil, fmt.Errorf("self-check: the reference backend: %w", err)
	}
	defer cb.Close()
	r := &SelfCheckReport{Device: mb.Device()}
	const window = 512
	mc, err := mb.NewCache(window)
	if err != nil {
		return fail("a cache", err)
	}
	defer mc.Close()
	cc, err := cb.NewCache(window)
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	if probe, err := cc.Export(); err != nil {
		return nil, err
	} else if probe.DType != safetensors.F32 || probe.Quant != nil {
		return nil, fmt.Errorf("self-check: the reference backend's cache is %s, not float32", probe.DType)
	}
	vocab := m.Config.VocabSize
	tokens := func(from, n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32((from+i)*7+3) % int32(vocab)
		}
		return out
	}
	// The growth step is 256 positions: 250, then 10 across it, then one.
	steps := []struct {
		name    string
		from, n int
		all     bool
	}{
		{"a 250-token prompt", 0, 250, false},
		{"10 more tokens across the cache's growth", 250, 10, true},
		{"one decoded token", 260, 1, false},
	}
	var promptLogits []float32 // the reference's, after the first step
	for _, s := range steps {
		n := vocab
		if s.all {
			n *= s.n
		}
		got, want := make([]float32, n), make([]float32, n)
		if promptLogits == nil {
			promptLogits = want
		}
		if err := mb.Forward(mc, tokens(s.from, s.n), got); err != nil {
			return fail(s.name, err)
		}
		if err := cb.Forward(cc, tokens(s.from, s.n), want); err != nil {
			return nil, err
		}
		if err := r.compare(got, want); err != nil {
			return fail(s.name, err)
		}
	}
	gs, err := mc.Export()
	if err != nil {
		return fail("exporting the cache", err)
	}
	ws, err := cc.Export()
	if err != nil {
		return nil, err
	}
	for l := range ws.K {
		if err := r.compareBytes(gs.K[l], ws.K[l]); err != nil {
			return fail(fmt.Sprintf("the exported keys of layer %d", l), err)
		}
		if err := r.compareBytes(gs.V[l], ws.V[l]); err != nil {
			return fail(fmt.Sprintf("the exported values of layer %d", l), err)
		}
	}
	// The reference's state imported into a new MLX cache decodes as the
	// reference does.
	mi, err := mb.NewCache(window)
	if err != nil {
		return fail("a cache", err)
	}
	defer mi.Close()
	if err := mi.Import(ws); err != nil {
		return fail("importing a cache", err)
	}
	got, want := make([]float32, vocab), make([]float32, vocab)
	if err := mb.Forward(mi, tokens(261, 1), got); err != nil {
		return fail("decoding after an import", err)
	}
	if err := cb.Forward(cc, tokens(261, 1), want); err != nil {
		return nil, err
	}
	if err := r.compare(got, want); err != nil {
		return fail("decoding after an import", err)
	}
	for _, kt := range []engine.KVType{engine.KVF16, engine.KVBF16, engine.KVQ8} {
		if err := r.checkKVType(m, opt, kt, tokens(0, 251), promptLogits); err != nil {
			return fail("a "+string(kt)+" cache", err)
		}
	}
	if err := checkPick(m, opt, tokens(0, 20)); err != nil {
		return fail("sampling on the device", err)
	}
	r.Took = time.Since(start)
	return r, nil
}

// kvSelfCheckTolerance bounds the difference of the prompt's logits on a
// cache of each type from the reference's (float32), relative to
// |logit| above 1: the cache's rounding (measured on MLX's CPU device:
// 0.011 for f16, 0.060 for bf16, 0.084 for q8_0), with room to spare,
// and far below what a wrong computation gives.
var kvSelfCheckTolerance = map[engine.KVType]float64{engine.KVF16: 0.03, engine.KVBF16: 0.15, engine.KVQ8: 0.15}

// checkKVType runs the self-check's prompt (all but the last of tokens)
// on a backend with caches of type kt, compares the last logits with the
// reference's, then exports the cache, imports it into a new one and
// decodes the last token on both: they must agree as one cache with
// itself does.
func (r *SelfCheckReport) checkKVType(m *engine.Model, opt Options, kt engine.KVType, tokens []int32, want []float32) error {
	opt.KVType = kt
	b, err := New(m, opt)
	if err != nil {
		return err
	}
	defer b.Close()
	c, err := b.NewCache(len(tokens))
	if err != nil {
		return err
	}
	defer c.Close()
	n := len(tokens) - 1
	got := make([]float32, len(want))
	if err := b.Forward(c, tokens[:n], got); err != nil {
		return err
	}
	if err := r.compareWithin(got, want, kvSelfCheckTolerance[kt], "on the cpu backend's float32 cache", false); err != nil {
		return fmt.Errorf("the prompt: %w", err)
	}
	s, err := c.Export()
	if err != nil {
		return err
	}
	ci, err := b.NewCache(len(tokens))
	if err != nil {
		return err
	}
	defer ci.Close()
	if err := ci.Import(s); err != nil {
		return err
	}
	imported := make([]float32, len(want))
	if err := b.Forward(ci, tokens[n:], imported); err != nil {
		return err
	}
	if err := b.Forward(c, tokens[n:], got); err != nil {
		return err
	}
	if err := r.compareWithin(imported, got, selfCheckTolerance, "on the cache it was exported from", false); err != nil {
		return fmt.Errorf("decoding after its export was imported: %w", err)
	}
	return nil
}

// SelfCheckError is a failed self-check: the step and what went wrong.
type SelfCheckError struct {
	Step string
	Err  error
}

func (e *SelfCheckError) Error() string { return "self-check: " + e.Step + ": " + e.Err.Error() }

func (e *SelfCheckError) Unwrap() error { return e.Err }

// compare checks got against want within selfCheckTolerance, relative to
// |want| above 1, and records the largest difference in MaxDiff.
func (r *SelfCheckReport) compare(got, want []float32) error {
	return r.compareWithin(got, want, selfCheckTolerance, "on the cpu backend", true)
}

// compareWithin checks got against want within tol, relative to |want|
// above 1, where other names want's source in an error; record puts the
// largest difference in MaxDiff.
func (r *SelfCheckReport) compareWithin(got, want []float32, tol float64, other string, record bool) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d values, want %d", len(got), len(want))
	}
	worst, at := 0.0, -1
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		d := math.Abs(g-w) / max(1, math.Abs(w))
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		if d > worst {
			worst, at = d, i
		}
	}
	r.Compared += len(want)
	if record {
		r.MaxDiff = max(r.MaxDiff, worst)
	}
	if worst > tol {
		return fmt.Errorf("value %d is %g on MLX and %g %s", at, got[at], want[at], other)
	}
	return nil
}

func (r *SelfCheckReport) compareBytes(got, want []byte) error {
	return r.compare(float32s(got), float32s(want))
}

func float32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// selfCheckConfig is the self-check model's config.json: two layers,
// grouped-query attention, llama3 RoPE scaling whose three bands (kept,
// smoothed, scaled) all occur at this head size.
const selfCheckConfig = `{"architectures": ["LlamaForCausalLM"], "model_type": "llama",
 "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
 "head_dim": 32, "intermediate_size": 128, "rms_norm_eps": 1e-5, "rope_theta": 500000,
 "rope_scaling": {"rope_type": "llama3", "factor": 32, "low_freq_factor": 1, "high_freq_factor": 4,
  "original_max_position_embeddings": 64},
 "tie_word_embeddings": false, "vocab_size": 96, "max_position_embeddings": 512,
 "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu"}`

// selfCheckModel builds the self-check's model in memory from a fixed
// seed: a 4-bit embedding (group 32), layer 0's projections 4-bit
// (group 32), layer 1's 8-bit (group 64), a bf16 output layer and f32
// norms.
func selfCheckModel() (*engine.Model, error) {
	cfg, err := engine.ParseConfig([]byte(selfCheckConfig))
	if err != nil {
		return nil, fmt.Errorf("self-check model: %w", err)
	}
	g := &weightGen{rng: rand.New(rand.NewPCG(18, 2026))}
	h, kv, hd, in, v := cfg.HiddenSize, cfg.NumKeyValueHeads, cfg.HeadDim, cfg.IntermediateSize, cfg.VocabSize
	q := cfg.NumAttentionHeads * hd
	m := &engine.Model{Dir: "(self-check)", Config: cfg, Fingerprint: "self-check"}
	w := &m.Weights
	w.EmbedTokens = g.quantized("model.embed_tokens", v, h, 4, 32)
	w.LMHead = g.dense("lm_head", v, h)
	w.Norm = g.norm("model.norm", h)
	for l, b := range []struct{ bits, group int }{{4, 32}, {8, 64}} {
		p := fmt.Sprintf("model.layers.%d.", l)
		w.Layers = append(w.Layers, engine.LayerWeights{
			InputLayernorm:         g.norm(p+"input_layernorm", h),
			PostAttentionLayernorm: g.norm(p+"post_attention_layernorm", h),
			QProj:                  g.quantized(p+"self_attn.q_proj", q, h, b.bits, b.group),
			KProj:                  g.quantized(p+"self_attn.k_proj", kv*hd, h, b.bits, b.group),
			VProj:                  g.quantized(p+"self_attn.v_proj", kv*hd, h, b.bits, b.group),
			OProj:                  g.quantized(p+"self_attn.o_proj", h, q, b.bits, b.group),
			GateProj:               g.quantized(p+"mlp.gate_proj", in, h, b.bits, b.group),
			UpProj:                 g.quantized(p+"mlp.up_proj", in, h, b.bits, b.group),
			DownProj:               g.quantized(p+"mlp.down_proj", h, in, b.bits, b.group),
		})
	}
	if g.err != nil {
		return nil, g.err
	}
	return m, nil
}

// weightGen makes seeded tensors in their stored forms.
type weightGen struct {
	rng *rand.Rand
	err error
}

func (g *weightGen) bf16(n int, f func() float64) []byte {
	out := make([]byte, 2*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(math.Float32bits(float32(f()))>>16))
	}
	return out
}

func (g *weightGen) dense(name string, rows, cols int) engine.Tensor {
	return engine.Tensor{Name: name + ".weight", File: "(self-check)", DType: safetensors.BF16, Shape: []int{rows, cols},
		Data: g.bf16(rows*cols, func() float64 { return g.rng.NormFloat64() * 0.3 })}
}

func (g *weightGen) norm(name string, n int) engine.Tensor {
	data := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(0.8+0.4*g.rng.Float64())))
	}
	return engine.Tensor{Name: name + ".weight", File: "(self-check)", DType: safetensors.F32, Shape: []int{n}, Data: data}
}

// quantized is an MLX affine matrix: random codes, and per group a scale
// and a bias that centre the weights on zero.
func (g *weightGen) quantized(name string, rows, cols, bits, group int) engine.Tensor {
	if cols%group != 0 || cols*bits%32 != 0 {
		g.err = errors.Join(g.err, fmt.Errorf("self-check model: %s: %d columns in groups of %d", name, cols, group))
	}
	codes := make([]byte, rows*cols*bits/8)
	for i := range codes {
		codes[i] = byte(g.rng.Uint32())
	}
	groups := rows * cols / group
	scales := make([]float64, groups)
	for i := range scales {
		scales[i] = (0.5 + g.rng.Float64()) * 0.6 / float64(int(1)<<bits)
	}
	i, j := 0, 0
	mid := float64(int(1)<<bits-1) / 2
	st := g.bf16(groups, func() float64 { i++; return scales[i-1] })
	bt := g.bf16(groups, func() float64 { j++; return -scales[j-1] * mid * (0.9 + 0.2*g.rng.Float64()) })
	file := "(self-check)"
	return engine.Tensor{Name: name + ".weight", File: file, DType: safetensors.U32, Shape: []int{rows, cols}, Data: codes,
		Bits: bits, GroupSize: group,
		Scales: &engine.Tensor{Name: name + ".scales", File: file, DType: safetensors.BF16, Shape: []int{rows, cols / group}, Data: st},
		Biases: &engine.Tensor{Name: name + ".biases", File: file, DType: safetensors.BF16, Shape: []int{rows, cols / group}, Data: bt}}
}

// checkPick picks tokens on the device from the logits after prompt,
// greedy and sampled (top-k, top-p, min-p, a repetition penalty), free
// and under a mask wrapped from page-aligned memory, and checks that the
// engine's Sampler picks the same from the same logits and draws. A
// library that cannot wrap memory samples on the host: nothing to check.
func checkPick(m *engine.Model, opt Options, prompt []int32) error {
	var can bool
	opt.lib.Do(func(t *mlxc.Thread) error { can = t.CanWrap(); return nil })
	if !can {
		return nil
	}
	opt.Sampling = "device"
	b, err := New(m, opt)
	if err != nil {
		return err
	}
	defer b.Close()
	c, err := b.NewCache(len(prompt))
	if err != nil {
		return err
	}
	defer c.Close()
	vocab := m.Config.VocabSize
	logits := make([]float32, vocab)
	if err := b.ForwardKeep(c, prompt); err != nil {
		return err
	}
	if err := b.ReadLogits(c, logits); err != nil {
		return err
	}
	mask, pages := pageMask((vocab + 31) / 32)
	for i := range mask {
		mask[i] = 0x3333_3333 << (i % 3)
	}
	for _, cfg := range []engine.SamplerConfig{
		{TopP: 1, RepeatPenalty: 1},
		{Temperature: 1, TopK: 50, TopP: 0.9, MinP: 0.02, RepeatPenalty: 1.2, RepeatLastN: 8, Seed: 3},
	} {
		host, dev := engine.NewSampler(cfg, vocab), engine.NewSampler(cfg, vocab)
		for i := range 8 {
			var p engine.Pick
			want := int32(0)
			if i%2 == 1 {
				p.Mask, p.MaskPages = mask, pages
				want = host.SampleMask(slices.Clone(logits), mask, prompt, -1)
			} else {
				want = host.Sample(slices.Clone(logits), prompt, -1)
			}
			dev.Pick(&p, prompt, -1)
			got, top, err := b.Pick(c, &p)
			if err != nil {
				return err
			}
			if got != want || top != engine.Argmax(logits) {
				return fmt.Errorf("picked %d (top %d) where the engine's sampler picks %d (top %d)", got, top, want, engine.Argmax(logits))
			}
		}
	}
	return nil
}
