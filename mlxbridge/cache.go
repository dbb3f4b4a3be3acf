package mlxbridge

import (
	"fmt"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// cacheStep is how many positions the device buffers grow by at a time.
const cacheStep = 256

// kvBuffers is a cache's device memory: per layer, K and V shaped
// (1, kv_heads, capacity, head_dim) float32, mlx-lm's KVCache layout.
type kvBuffers struct {
	k, v     []*mlxc.Array
	capacity int
}

func (kv *kvBuffers) free(t *mlxc.Thread) {
	for i := range kv.k {
		t.Free(kv.k[i])
		t.Free(kv.v[i])
		kv.k[i], kv.v[i] = nil, nil
	}
	kv.capacity = 0
}

// cache is one sequence's keys and values on the device.
type cache struct {
	b         *Backend
	n, window int
	kv        *kvBuffers
	// broken is the MLX error that left the buffers half-updated.
	broken error
	closed bool
}

var _ engine.Cache = (*cache)(nil)

func (c *cache) Len() int    { return c.n }
func (c *cache) Window() int { return c.window }

// Truncate implements engine.Cache: positions from n on are overwritten
// by the next Forward.
func (c *cache) Truncate(n int) {
	if n < 0 || n > c.n {
		panic(fmt.Sprintf("mlx cache: Truncate(%d) outside [0, %d]", n, c.n))
	}
	c.n = n
}

// Close implements engine.Cache: it frees the device buffers at once (the
// cleanup registered by NewCache only catches a cache dropped without
// Close); calling it again does nothing.
func (c *cache) Close() error {
	if !c.closed {
		c.closed = true
		c.b.release(c.kv)
	}
	return nil
}

// live panics when the cache or its backend is closed.
func (c *cache) live() {
	if c.closed {
		panic("mlxbridge: use of a closed cache")
	}
	if c.b.closed {
		panic("mlxbridge: use of a cache of a closed backend")
	}
}

// usable is live, and an error when an MLX failure broke the buffers.
func (c *cache) usable() error {
	c.live()
	if c.broken != nil {
		return fmt.Errorf("mlx: this cache is unusable after an earlier MLX error (%v); start a new one", c.broken)
	}
	return nil
}

func (c *cache) shape(positions int) []int {
	return []int{1, c.b.cfg.NumKeyValueHeads, positions, c.b.cfg.HeadDim}
}

// reserve makes room for need positions, growing by whole steps, so that
// decoding reallocates only once every cacheStep tokens.
func (c *cache) reserve(t *mlxc.Thread, need int) {
	kv := c.kv
	if need <= kv.capacity {
		return
	}
	capacity := min((need+cacheStep-1)/cacheStep*cacheStep, c.window)
	origin, used := make([]int, 4), c.shape(c.n)
	for l := range kv.k {
		for _, buf := range []*[]*mlxc.Array{&kv.k, &kv.v} {
			grown := t.Zeros(c.shape(capacity), mlxc.Float32)
			if old := (*buf)[l]; old != nil && c.n > 0 {
				grown = t.SliceUpdate(grown, t.Slice(old, origin, used), origin, used)
			}
			(*buf)[l] = replace(t, (*buf)[l], grown)
		}
	}
	kv.capacity = capacity
}

// replace frees old and keeps new in its place. Freeing the old handle
// before evaluation lets MLX update a buffer in place (slice_update
// donates an input no one else holds).
func replace(t *mlxc.Thread, old, new *mlxc.Array) *mlxc.Array {
	t.Free(old)
	return t.Keep(new)
}

// append writes k and v, shaped (1, kv_heads, n, head_dim), at positions
// c.n.. of a layer and returns the keys and values of positions 0..c.n+n.
func (c *cache) append(t *mlxc.Thread, layer, n int, k, v *mlxc.Array) (keys, values *mlxc.Array) {
	start, stop := []int{0, 0, c.n, 0}, c.shape(c.n+n)
	origin := make([]int, 4)
	c.kv.k[layer] = replace(t, c.kv.k[layer], t.SliceUpdate(c.kv.k[layer], k, start, stop))
	c.kv.v[layer] = replace(t, c.kv.v[layer], t.SliceUpdate(c.kv.v[layer], v, start, stop))
	return t.Slice(c.kv.k[layer], origin, stop), t.Slice(c.kv.v[layer], origin, stop)
}

// Export implements engine.Cache: float32 (kv_heads, len, head_dim) per
// layer, read from the device buffers.
func (c *cache) Export() (*engine.KVState, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	cfg := c.b.cfg
	s := &engine.KVState{Len: c.n, KVHeads: cfg.NumKeyValueHeads, HeadDim: cfg.HeadDim, DType: safetensors.F32,
		K: make([][]byte, cfg.NumHiddenLayers), V: make([][]byte, cfg.NumHiddenLayers)}
	err := c.b.lib.Do(func(t *mlxc.Thread) error {
		t.Use(c.b.stream)
		origin, used := make([]int, 4), c.shape(c.n)
		for l := range s.K {
			if c.n == 0 {
				s.K[l], s.V[l] = []byte{}, []byte{}
				continue
			}
			s.K[l] = float32Bytes(t.Float32s(t.Slice(c.kv.k[l], origin, used)))
			s.V[l] = float32Bytes(t.Float32s(t.Slice(c.kv.v[l], origin, used)))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("mlx: exporting the KV cache: %w", err)
	}
	return s, nil
}

// Import implements engine.Cache, widening f16 and bf16 states to float32.
func (c *cache) Import(s *engine.KVState) error {
	c.live()
	if err := c.b.checks.Import(c, s); err != nil {
		return err
	}
	dt, _ := mlxDtype(s.DType) // F32, F16 or BF16, which MLX has
	err := c.b.lib.Do(func(t *mlxc.Thread) error {
		t.Use(c.b.stream)
		kv := c.kv
		kv.free(t)
		c.n = 0
		if s.Len == 0 {
			return nil
		}
		kv.capacity = min((s.Len+cacheStep-1)/cacheStep*cacheStep, c.window)
		origin, used := make([]int, 4), c.shape(s.Len)
		var all []*mlxc.Array
		for l := range kv.k {
			for _, p := range []struct {
				dst *[]*mlxc.Array
				src []byte
			}{{&kv.k, s.K[l]}, {&kv.v, s.V[l]}} {
				x := t.AsType(t.FromBytes(p.src, used, dt), mlxc.Float32)
				buf := t.SliceUpdate(t.Zeros(c.shape(kv.capacity), mlxc.Float32), x, origin, used)
				(*p.dst)[l] = t.Keep(buf)
				all = append(all, buf)
			}
		}
		t.Eval(all...)
		return nil
	})
	if err != nil {
		c.broken = err
		return fmt.Errorf("mlx: importing the KV cache: %w", err)
	}
	c.n, c.broken = s.Len, nil
	return nil
}

// float32Bytes copies f's bytes (little-endian on every platform MLX
// runs on).
func float32Bytes(f []float32) []byte {
	out := make([]byte, 4*len(f))
	if len(f) > 0 {
		copy(out, unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), len(out)))
	}
	return out
}
