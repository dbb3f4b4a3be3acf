// Package mlxbridge is the MLX backend: engine.Backend on MLX through its C
// API, libmlxc, opened at run time with purego, so the same source builds
// everywhere and needs no MLX headers. On a Mac the model runs on the
// Apple GPU; where MLX has no GPU (the Linux CPU build) it runs on MLX's
// CPU device.
//
// Weights stay in their stored form (4-bit stays 4-bit and goes through
// quantized_matmul); activations and the logits are float32. The KV cache
// is kept in Options.KVType: f16 (the default), bf16 or f32 in mlx-lm's
// KVCache layout, attention computed by MLX's fused
// scaled_dot_product_attention in that type (the queries rounded to it,
// the output widened back to float32); or q8_0, MLX's affine 8-bit
// quantisation in groups of 32 with float16 scales and biases in mlx-lm's
// QuantizedKVCache layout, attention computed from the codes by
// quantized_matmul with float32 queries and softmax, as mlx-lm's quantized
// attention does (q8_0 needs a head_dim that is a multiple of 32). With
// an f32 cache, results match the CPU backend's float path to the golden
// tolerance; the other types add their rounding. Every MLX call runs on
// one goroutine locked to its OS thread (see internal/mlxc).
package mlxbridge

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// Options configures the MLX backend.
type Options struct {
	// Library is libmlxc's path (a file or its folder) from the
	// configuration; "" searches the usual places (see Candidates).
	// DRIFTWOOD_MLXC overrides it.
	Library string
	// Device is "gpu", "cpu", or "" for the GPU when MLX has one.
	Device string
	// MaxBatch bounds how many prompt tokens go through the model
	// together; 0 means 512.
	MaxBatch int
	// Sampling is where tokens are picked: "device" (engine.DeviceSampler:
	// the logits stay in MLX and a controller's mask is mapped there;
	// mlx-c 0.5.0 or newer), "host" (the logits come back and the
	// engine's Sampler picks), or "" for the device on a GPU and the
	// host on MLX's CPU device, where the host's sampler is the faster
	// (BenchmarkPick) and the logits are in host memory anyway. Both
	// pick the same tokens.
	Sampling string
	// KVType is the KV cache's element type; "" means
	// engine.DefaultKVType. Caches export their state in it (q8_0 as an
	// engine.KVQuant of 8-bit groups of 32) and convert any state they
	// import to it.
	KVType engine.KVType

	// Reference makes the backend that a library newer than every mlx-c
	// release Driftwood knows is self-checked against before use (see
	// SelfCheck): the CPU backend on its float kernels. Without it such
	// a library is refused, unless DRIFTWOOD_MLXC_TRUST=1.
	Reference func(*engine.Model) (engine.Backend, error)

	// Group, when it has more than one rank, makes this backend one rank
	// of a tensor-parallel model (ranks.go): it loads its share of the
	// weights and meets the other ranks in every forward pass. On rank
	// 0 it is a whole engine.Backend; the other ranks run Follow.
	Group *Group

	lib     *mlxc.Lib // a loaded library (the tests' fake), used instead of Library
	checked bool      // the self-check's own New
}

// Backend runs a Llama model on MLX. Forward is not safe for concurrent
// use: one backend serves one decode loop at a time.
type Backend struct {
	lib      *mlxc.Lib
	cfg      *engine.Config
	checks   engine.Checks
	stream   *mlxc.Stream
	w        weights
	owned    []*mlxc.Array // the weights' arrays, freed by Close
	maxBatch int
	kvType   engine.KVType
	layout   []kvPart // the KV cache's parts (kvLayout)
	closed   bool
	onDevice bool         // Pick is used (SamplesOnDevice)
	vocab    *vocabArrays // Pick's per-token constants, made at its first use
	scratch  []int32      // Pick's in-vocabulary ids

	group          *Group  // set when one rank of several (ranks.go)
	fingerprint    string  // the model's, which the ranks compare
	heads, kvHeads int     // the query and key-value heads on this rank
	command        []int32 // the command buffer rank 0 sends the others

	mu     sync.Mutex // guards caches: cleanups run on their own goroutine
	caches map[*kvBuffers]struct{}
}

var _ engine.Backend = (*Backend)(nil)

// New loads libmlxc (see Options.Library), picks the device and copies the
// model's weights into MLX in their stored dtypes. The model may be closed
// afterwards.
//
// # Errors
//
// When the library is absent, an error listing every place looked at;
// when it is not a usable libmlxc, one naming the file and each missing
// function (or an mlx-c older than MinCAPI, with the upgrade command);
// for a library newer than every mlx-c release Driftwood knows, the
// self-check's failure (see SelfCheck and TrustEnvVar); an MLX error
// naming the failed call.
func New(m *engine.Model, opt Options) (*Backend, error) {
	lib := opt.lib
	if lib == nil && opt.Group != nil {
		lib = opt.Group.lib
	}
	if lib == nil {
		var err error
		if lib, err = open(opt.Library); err != nil {
			return nil, err
		}
	}
	if lib.Release.Newer && !opt.checked && os.Getenv(TrustEnvVar) != "1" {
		if err := selfCheckNewer(lib, opt); err != nil {
			return nil, err
		}
	}
	kt, err := kvType(opt.KVType, m.Config.HeadDim)
	if err != nil {
		return nil, err
	}
	b := &Backend{lib: lib, cfg: m.Config, checks: engine.NewChecks("mlx", m), maxBatch: opt.MaxBatch,
		kvType: kt, layout: kvLayout(kt, m.Config.HeadDim), caches: map[*kvBuffers]struct{}{},
		heads: m.Config.NumAttentionHeads, kvHeads: m.Config.NumKeyValueHeads}
	if b.maxBatch <= 0 {
		b.maxBatch = 512
	}
	if g := opt.Group; g != nil && g.Size > 1 {
		if err := shardable(m.Config, g.Size); err != nil {
			return nil, fmt.Errorf("mlx: %w", err)
		}
		b.group, b.heads, b.kvHeads, b.fingerprint = g, b.heads/g.Size, b.kvHeads/g.Size, m.Fingerprint
		b.command = make([]int32, commandLength)
		b.maxBatch = min(b.maxBatch, commandTokens)
	}
	err = lib.Do(func(t *mlxc.Thread) error {
		dev, err := device(t, opt.Device)
		if err != nil {
			return err
		}
		b.stream = t.DefaultStream(dev)
		if t.Err() != nil {
			return t.Err()
		}
		t.Use(b.stream)
		if b.onDevice, err = sampling(t, opt.Sampling, dev, lib.Release.Name); err != nil {
			return err
		}
		if err := b.load(t, &m.Weights); err != nil {
			return err
		}
		t.Eval(b.owned...)
		if b.sharded() {
			// The whole matrices the shares were cut from are free, but
			// MLX keeps freed buffers for reuse: a rank's memory would be
			// the whole model's.
			t.ClearCache()
		}
		if b.sharded() && b.group.Rank == 0 {
			b.tell(t, opCheck, 0, 0, nil)
			return b.checkModel(t)
		}
		return nil
	})
	if err != nil {
		b.Close()
		return nil, fmt.Errorf("mlx: %w", err)
	}
	return b, nil
}

// sampling says whether tokens are picked on the device, as asked
// (Options.Sampling) and as the library and device allow.
func sampling(t *mlxc.Thread, where string, dev mlxc.DeviceType, release string) (bool, error) {
	switch where {
	case "":
		return dev == mlxc.GPU && t.CanWrap(), nil
	case "host":
		return false, nil
	case "device":
		if !t.CanWrap() {
			return false, fmt.Errorf("sampling on the device needs mlx-c 0.5.0 or newer (mlx_array_new_data_managed); this is mlx-c %s", release)
		}
		return true, nil
	}
	return false, fmt.Errorf("sampling %w", CheckSampling(where))
}

// CheckSampling says whether where is a value of Options.Sampling.
func CheckSampling(where string) error {
	switch where {
	case "", "device", "host":
		return nil
	}
	return fmt.Errorf("%q: want device, host, or empty (the device on a GPU, the host on MLX's CPU device)", where)
}

// kvType checks a KV cache type for a model whose heads have hd values.
func kvType(kt engine.KVType, hd int) (engine.KVType, error) {
	kt, err := engine.ParseKVType(string(kt))
	if err != nil {
		return "", fmt.Errorf("mlx backend: %w", err)
	}
	if kt == engine.KVQ8 && hd%q8Group != 0 {
		return "", fmt.Errorf("mlx backend: kv_type q8_0 needs a head_dim that is a multiple of %d (this model's is %d); use f16, bf16 or f32", q8Group, hd)
	}
	return kt, nil
}

// selfCheckNewer runs the self-check on a library newer than every known
// mlx-c release.
func selfCheckNewer(lib *mlxc.Lib, opt Options) error {
	newer := fmt.Sprintf("%s is newer than every mlx-c release this Driftwood knows (%s)", lib.Path, lib.Release.Why)
	if opt.Reference == nil {
		return fmt.Errorf("mlx: %s; set %s=1 to use it unchecked, at your own risk", newer, TrustEnvVar)
	}
	opt.lib, opt.checked = lib, true
	if _, err := SelfCheck(opt, opt.Reference); err != nil {
		return fmt.Errorf("mlx: %s and failed Driftwood's self-check (%v); set %s=1 to use it anyway, at your own risk", newer, err, TrustEnvVar)
	}
	return nil
}

func open(library string) (*mlxc.Lib, error) {
	path, err := mlxc.Search{Path: library}.Find()
	if err != nil {
		return nil, err
	}
	return mlxc.Open(path)
}

// device picks the device kind for name ("gpu", "cpu" or "").
func device(t *mlxc.Thread, name string) (mlxc.DeviceType, error) {
	switch name {
	case "", "auto":
		if t.DeviceAvailable(mlxc.GPU) {
			return mlxc.GPU, nil
		}
		return mlxc.CPU, nil
	case "gpu":
		if !t.DeviceAvailable(mlxc.GPU) {
			return 0, errors.New("this MLX build has no GPU (it was built for the CPU only)")
		}
		return mlxc.GPU, nil
	case "cpu":
		return mlxc.CPU, nil
	}
	return 0, fmt.Errorf("device %q: want gpu, cpu or auto", name)
}

// Name implements engine.Backend.
func (b *Backend) Name() string { return "mlx" }

// Device is the MLX device the model runs on: "gpu" or "cpu".
func (b *Backend) Device() string { return b.stream.Device.String() }

// KVType is the element type of the backend's KV caches.
func (b *Backend) KVType() engine.KVType { return b.kvType }

// Close frees the weights and every cache's buffers (using a cache
// afterwards panics); calling it again does nothing.
func (b *Backend) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	b.mu.Lock()
	caches := b.caches
	b.caches = nil
	b.mu.Unlock()
	return b.lib.Do(func(t *mlxc.Thread) error {
		for kv := range caches {
			b.freeCache(t, kv)
		}
		for _, a := range b.owned {
			t.Free(a)
		}
		b.vocab.free(t)
		if b.stream != nil {
			t.FreeStream(b.stream)
		}
		return nil
	})
}

// NewCache implements engine.Backend. The cache's device buffers grow in
// steps as positions are added; the cache's Close (or the backend's)
// frees them. A cleanup frees the buffers of a cache dropped without
// Close after garbage collection, as a safety net only.
func (b *Backend) NewCache(window int) (engine.Cache, error) {
	if err := b.checks.Window(window); err != nil {
		return nil, err
	}
	kv := newKVBuffers(len(b.layout), b.cfg.NumHiddenLayers)
	b.mu.Lock()
	if b.caches == nil {
		b.mu.Unlock()
		panic("mlxbridge: NewCache on a closed backend")
	}
	b.caches[kv] = struct{}{}
	b.mu.Unlock()
	if b.sharded() {
		kv.id = int(b.group.nextCache.Add(1))
		err := b.lib.Do(func(t *mlxc.Thread) error { t.Use(b.stream); b.tell(t, opNewCache, kv.id, window, nil); return nil })
		if err != nil {
			return nil, fmt.Errorf("mlx: %w", err)
		}
	}
	c := &cache{b: b, window: window, kv: kv}
	runtime.AddCleanup(c, b.release, kv)
	return c, nil
}

// release frees a cache's buffers unless the backend already has.
func (b *Backend) release(kv *kvBuffers) {
	b.mu.Lock()
	_, live := b.caches[kv]
	delete(b.caches, kv)
	b.mu.Unlock()
	if live {
		b.lib.Do(func(t *mlxc.Thread) error {
			b.freeCache(t, kv)
			return nil
		})
	}
}

// freeCache frees a cache's buffers here and tells the other ranks to
// free theirs.
func (b *Backend) freeCache(t *mlxc.Thread, kv *kvBuffers) {
	kv.free(t)
	if b.sharded() {
		t.Use(b.stream)
		b.tell(t, opCloseCache, kv.id, 0, nil)
	}
}

// Forward implements engine.Backend.
func (b *Backend) Forward(ec engine.Cache, tokens []int32, logits []float32) error {
	c, err := b.cacheOf(ec)
	if err != nil {
		return err
	}
	all, err := b.checks.Forward(c, tokens, logits)
	if err != nil {
		return err
	}
	return b.feed(c, tokens, all, func(t *mlxc.Thread, res *mlxc.Array) {
		m := copy(logits, t.Float32s(res))
		logits = logits[m:]
	})
}

// cacheOf is ec as this backend's cache, usable.
func (b *Backend) cacheOf(ec engine.Cache) (*cache, error) {
	if b.closed {
		panic("mlxbridge: use of a closed backend")
	}
	c, ok := ec.(*cache)
	if !ok || c.b != b {
		return nil, fmt.Errorf("mlx: cache %T was not made by this backend", ec)
	}
	return c, c.usable()
}

// feed runs tokens through the model in batches of at most maxBatch and
// hands out the logits of every token (all) or of the last.
func (b *Backend) feed(c *cache, tokens []int32, all bool, out func(*mlxc.Thread, *mlxc.Array)) error {
	if err := b.lostErr(); err != nil {
		return err
	}
	err := b.lib.Do(func(t *mlxc.Thread) error {
		t.Use(b.stream)
		for len(tokens) > 0 {
			n := min(len(tokens), b.maxBatch)
			mode := logitsNone
			switch {
			case all:
				mode = logitsAll
			case n == len(tokens):
				mode = logitsLast
			}
			b.tell(t, opForward, c.kv.id, 0, tokens[:n])
			res := b.forward(t, c, tokens[:n], mode)
			if err := t.Err(); err != nil {
				c.broken = err
				if b.sharded() {
					b.group.setLost(err)
					return fmt.Errorf("running across %d ranks: %w", b.group.Size, err)
				}
				return err
			}
			if mode != logitsNone {
				out(t, res)
			}
			tokens = tokens[n:]
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("mlx: %w", err)
	}
	return nil
}

// lostErr says, on a split model whose ranks lost one another, that it
// can no longer run.
func (b *Backend) lostErr() error {
	if !b.sharded() {
		return nil
	}
	if err := b.group.lostErr(); err != nil {
		return fmt.Errorf("mlx: a rank was lost earlier (%w): the model can no longer run", err)
	}
	return nil
}
