// Package cpu is the CPU backend: the reference implementation of
// engine.Backend that every other backend is checked against. Weights stay
// memory-mapped in their stored dtype and are dequantised inside the
// kernels; scratch buffers are allocated once, so a decode step allocates
// nothing.
//
// The hot loops are vector kernels (kernelSet): assembly on amd64 (AVX2 +
// FMA, AVX-512 where it pays, and int8 products for quantised weights
// with AVX-512 VNNI, AVX-VNNI or AVX2, int8.go) and on arm64 (NEON, and
// int8 products with SDOT), picked at start from the CPU's features, and
// portable Go versions that serve other architectures and every CPU when
// the environment has DRIFTWOOD_NOSIMD=1. Options.Kernels (or, when it is
// empty, DRIFTWOOD_KERNELS) names a set to use instead, "float" the
// fastest that multiplies in float. The set belongs to the backend: two
// backends with different sets run side by side in one process.
package cpu

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
)

// Options configures the CPU backend.
type Options struct {
	// Threads is the number of goroutines for matrix work; 0 means one
	// per physical core this process may use (Tuning.Threads).
	Threads int
	// MaxBatch bounds how many tokens go through the model together
	// (matrix-matrix); 0 means the kernel set's choice: 128 on AMX tiles,
	// else 64 (docs/RATIONALE.md, "Chosen at run time").
	MaxBatch int
	// KVType is the KV cache's element type; "" means
	// engine.DefaultKVType. q8_0 needs head_dim a multiple of 32.
	KVType engine.KVType
	// Kernels names the kernel set: one this CPU runs, or "float" for
	// the float reference; "" means DRIFTWOOD_KERNELS, or the fastest
	// (DefaultKernels).
	Kernels string
	// Activations is how an int8 kernel set rounds the inputs:
	// ActivationsInt8 or ActivationsInt8x2 (residual.go); "" means
	// DRIFTWOOD_ACTIVATIONS, or int8.
	Activations string
	// TuningCache is the folder where what was measured on this CPU is
	// kept for the next process (the prefetch distance, ahead.go);
	// "" keeps nothing (DefaultTuningCache is the command line's).
	TuningCache string
}

// MaxThreadsPerCPU bounds Options.Threads: goroutines beyond a few per
// CPU only add switching (threads = 100000 made every step slow).
const MaxThreadsPerCPU = 4

// CheckThreads says whether n is a usable Options.Threads on this
// machine: 0 (one per physical core) up to MaxThreadsPerCPU per CPU.
func CheckThreads(n int) error {
	if limit := MaxThreadsPerCPU * runtime.NumCPU(); n < 0 || n > limit {
		return fmt.Errorf("must be 0 (one per physical core) to %d (%d per CPU on this machine)", limit, MaxThreadsPerCPU)
	}
	return nil
}

// Backend runs a Llama model on the CPU. Forward is not safe for
// concurrent use: one backend serves one decode loop at a time.
type Backend struct {
	cfg       *engine.Config
	checks    engine.Checks
	embed     matrix // (vocab, hidden)
	layers    []layer
	finalNorm []float32 // (hidden)
	lmHead    matrix    // (vocab, hidden); embed when tied
	fam       family
	rope      ropeTable
	pool      *pool
	kvType    engine.KVType
	ks        *kernelSet
	residual  bool // int8x2 activations (Options.Activations)
	ahead     *aheadTuner
	st        state
	mm        matmulJob
	att       attnJob
	rj        rowsJob
}

var _ engine.Backend = (*Backend)(nil)

// layer is one transformer block's weights, named as the checkpoint
// names them (model.layers.N.…), as mlx-lm and the MLX backend do.
type layer struct {
	inputLayernorm, postAttentionLayernorm []float32 // (hidden)
	qProj, kProj, vProj, oProj             matrix
	gateProj, upProj, downProj             matrix
	// The family's extras (family), nil where it has none.
	qBias, kBias, vBias []float32
	qNorm, kNorm        []float32 // (head_dim)
}

// family is all that sets a model family's block apart from Llama's, read
// once from the config: the forward pass asks it and nothing else.
type family struct {
	permutedQK bool // GGUF llama: q and k heads' rows in llama.cpp's order
	qkvBias    bool // Qwen2: biases on the q, k and v projections
	qkNorm     bool // Qwen3: each q and k head RMS-normed before RoPE
}

func familyOf(c *engine.Config) family {
	return family{permutedQK: c.PermutedQK, qkvBias: c.QKVBias(), qkNorm: c.QKNorm()}
}

// New prepares model for the CPU. The model must stay open while the
// backend is used.
func New(m *engine.Model, opt Options) (*Backend, error) {
	ks, err := chooseKernels(opt.Kernels)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	return newBackend(m, opt, ks)
}

// newBackend is New on the kernel set ks.
func newBackend(m *engine.Model, opt Options, ks *kernelSet) (*Backend, error) {
	residual, err := chooseActivations(opt.Activations, ks)
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	c := m.Config
	if err := CheckThreads(opt.Threads); err != nil {
		return nil, fmt.Errorf("cpu: threads %d: %w", opt.Threads, err)
	}
	threads := opt.Threads
	if threads <= 0 {
		threads = DetectTuning().Threads
	}
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = ks.maxBatch()
	}
	kvType, err := engine.ParseKVType(string(opt.KVType))
	if err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	if kvType == engine.KVQ8 && c.HeadDim%engine.Q8Block != 0 {
		return nil, fmt.Errorf("cpu: kv_type q8_0 needs head_dim a multiple of %d; this model's is %d (use f16, bf16 or f32)", engine.Q8Block, c.HeadDim)
	}
	b := &Backend{cfg: c, checks: engine.NewChecks("cpu", m), fam: familyOf(c), rope: newRopeTable(c), kvType: kvType, ks: ks}
	w := &m.Weights
	var errs []error
	mat := func(t *engine.Tensor) matrix {
		mx, err := newMatrix(t, ks)
		errs = append(errs, err)
		return mx
	}
	vec := func(t *engine.Tensor) []float32 {
		v, err := vector(t, ks)
		errs = append(errs, err)
		return v
	}
	b.embed = mat(&w.EmbedTokens)
	b.lmHead = b.embed
	if w.LMHead.Name != w.EmbedTokens.Name {
		b.lmHead = mat(&w.LMHead)
	}
	b.finalNorm = vec(&w.Norm)
	b.layers = make([]layer, len(w.Layers))
	for i := range w.Layers {
		lw, l := &w.Layers[i], &b.layers[i]
		l.inputLayernorm, l.postAttentionLayernorm = vec(&lw.InputLayernorm), vec(&lw.PostAttentionLayernorm)
		l.qProj, l.kProj, l.vProj, l.oProj = mat(&lw.QProj), mat(&lw.KProj), mat(&lw.VProj), mat(&lw.OProj)
		l.gateProj, l.upProj, l.downProj = mat(&lw.GateProj), mat(&lw.UpProj), mat(&lw.DownProj)
		if b.fam.qkvBias {
			l.qBias, l.kBias, l.vBias = vec(&lw.QBias), vec(&lw.KBias), vec(&lw.VBias)
		}
		if b.fam.qkNorm {
			l.qNorm, l.kNorm = vec(&lw.QNorm), vec(&lw.KNorm)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	key, quant := aheadKey(ks, threads, w)
	if b.ahead, err = newAheadTuner(ks.prefetches && quant, key, opt.TuningCache); err != nil {
		return nil, fmt.Errorf("cpu: %w", err)
	}
	b.pool = newPool(threads)
	b.residual = residual
	b.st = newState(c, opt.MaxBatch, threads, residual)
	return b, nil
}

// vector converts a small weight vector (a norm's scale) to f32.
func vector(t *engine.Tensor, ks *kernelSet) ([]float32, error) {
	if t.Quantized() {
		return nil, fmt.Errorf("%s: tensor %s: a quantised norm weight is not supported", t.File, t.Name)
	}
	m, err := newMatrix(&engine.Tensor{Name: t.Name, File: t.File, DType: t.DType, Shape: []int{1, t.Shape[0]}, Data: t.Data}, ks)
	if err != nil {
		return nil, err
	}
	v := make([]float32, t.Shape[0])
	m.row(v, 0)
	return v, nil
}

// Name implements engine.Backend.
func (b *Backend) Name() string { return "cpu" }

// Kernels names the backend's kernel set (Options.Kernels).
func (b *Backend) Kernels() string { return b.ks.name }

// Activations is how the backend multiplies quantised weights: "float"
// (a float kernel set), ActivationsInt8 or ActivationsInt8x2.
func (b *Backend) Activations() string { return activationsName(b.ks, b.residual) }

// Threads is how many goroutines do the backend's matrix work.
func (b *Backend) Threads() int { return b.pool.workers }

// MaxBatch is how many tokens of a prompt go through the model together.
func (b *Backend) MaxBatch() int { return b.st.maxBatch }

// Prefetch is how many bytes ahead the int8 decode kernels prefetch the
// weights (of 4-bit codes; 8-bit ones twice as far), and where that
// came from: AheadMeasuring while the first decode steps measure it.
func (b *Backend) Prefetch() (ahead int, source string) { return b.ahead.ahead, b.ahead.source }

// Int8 reports whether the backend multiplies quantised weights with
// int8 activations (the float reference does not).
func (b *Backend) Int8() bool { return b.ks.int8() }

// KVType is the element type of the caches the backend makes.
func (b *Backend) KVType() engine.KVType { return b.kvType }

// Close stops the worker goroutines, and waits for a measurement to be
// saved (ahead.go).
func (b *Backend) Close() error {
	b.ahead.saving.Wait()
	if b.pool != nil {
		b.pool.close()
		b.pool = nil
	}
	return nil
}

// NewCache implements engine.Backend.
func (b *Backend) NewCache(window int) (engine.Cache, error) {
	if err := b.checks.Window(window); err != nil {
		return nil, err
	}
	return newCache(&b.checks, b.kvType, len(b.layers), b.cfg.NumKeyValueHeads, b.cfg.HeadDim, window), nil
}

// Forward implements engine.Backend.
func (b *Backend) Forward(ec engine.Cache, tokens []int32, logits []float32) error {
	if b.pool == nil {
		panic("cpu: Forward on a closed backend")
	}
	c, ok := ec.(*cache)
	if !ok {
		return fmt.Errorf("cpu: cache %T was not made by this backend", ec)
	}
	c.live()
	all, err := b.checks.Forward(c, tokens, logits)
	if err != nil {
		return err
	}
	vocab := b.cfg.VocabSize
	for len(tokens) > 0 {
		n := min(len(tokens), b.st.maxBatch)
		var out []float32
		switch {
		case all:
			out, logits = logits[:n*vocab], logits[n*vocab:]
		case n == len(tokens):
			out = logits
		}
		if n == 1 && len(tokens) == 1 {
			// A decode step: the pool compares worker counts by their
			// steps' times (pool.stepTook), and the tuner prefetch
			// distances (aheadTuner.stepTook).
			aheadNow.Store(int64(b.ahead.next()))
			start := time.Now()
			b.forward(c, tokens, out)
			took := time.Since(start)
			b.pool.stepTook(took)
			b.ahead.stepTook(took)
		} else {
			aheadNow.Store(int64(b.ahead.ahead))
			b.forward(c, tokens[:n], out)
		}
		tokens = tokens[n:]
	}
	return nil
}

// ropeTable holds the rotary frequencies, llama3-scaled when configured.
type ropeTable struct {
	invFreq []float64 // (head_dim/2)
}

func newRopeTable(c *engine.Config) ropeTable {
	return ropeTable{invFreq: c.InvFreq()}
}

// angles fills cos and sin (one row of head_dim/2 per position) for n
// positions from p0.
func (r *ropeTable) angles(cos, sin []float32, p0, n int) {
	half := len(r.invFreq)
	for b := 0; b < n; b++ {
		for i, f := range r.invFreq {
			s, c := math.Sincos(float64(p0+b) * f)
			cos[b*half+i], sin[b*half+i] = float32(c), float32(s)
		}
	}
}
