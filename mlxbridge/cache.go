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

// The q8_0 cache is MLX's affine quantisation in mlx-lm's QuantizedKVCache
// layout: 8-bit codes in groups of 32 along head_dim, with a float16 scale
// and bias per group.
const (
	q8Group = 32
	q8Bits  = 8
)

// The parts of a cache, in kvBuffers.parts: keys and values (or their
// codes), then, for q8_0 only, the keys' scales and biases and the
// values'.
const (
	partK = iota
	partV
	partKScales
	partKBiases
	partVScales
	partVBiases
)

// kvPart is one part's element type and last dimension.
type kvPart struct {
	dtype mlxc.Dtype
	width int
}

// kvLayout is the parts of a cache of type kt for heads of hd values: K
// and V (1, kv_heads, capacity, head_dim) in the type's dtype, mlx-lm's
// KVCache; for q8_0 the codes (1, kv_heads, capacity, head_dim/4) uint32
// and scales and biases (1, kv_heads, capacity, head_dim/32) float16,
// its QuantizedKVCache.
func kvLayout(kt engine.KVType, hd int) []kvPart {
	if kt == engine.KVQ8 {
		codes, groups := kvPart{mlxc.Uint32, hd * q8Bits / 32}, kvPart{mlxc.Float16, hd / q8Group}
		return []kvPart{codes, codes, groups, groups, groups, groups}
	}
	dt, _ := mlxDtype(kt.DType())
	return []kvPart{{dt, hd}, {dt, hd}}
}

// kvBuffers is a cache's device memory: per part of its layout
// (kvLayout), one array per layer.
type kvBuffers struct {
	parts    [][]*mlxc.Array
	capacity int
	// logits is the last token's logits of the last ForwardKeep.
	logits *mlxc.Array
	// id names the cache in rank 0's commands to the other ranks.
	id int
}

func newKVBuffers(parts, layers int) *kvBuffers {
	kv := &kvBuffers{parts: make([][]*mlxc.Array, parts)}
	for p := range kv.parts {
		kv.parts[p] = make([]*mlxc.Array, layers)
	}
	return kv
}

// all is every buffer, for evaluation.
func (kv *kvBuffers) all() []*mlxc.Array {
	var out []*mlxc.Array
	for _, p := range kv.parts {
		out = append(out, p...)
	}
	return out
}

func (kv *kvBuffers) free(t *mlxc.Thread) {
	t.Free(kv.logits)
	kv.logits = nil
	for _, p := range kv.parts {
		for l := range p {
			t.Free(p[l])
			p[l] = nil
		}
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
	if c.b.sharded() {
		c.b.lib.Do(func(t *mlxc.Thread) error { t.Use(c.b.stream); c.b.tell(t, opTruncate, c.kv.id, n, nil); return nil })
	}
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

// shape is a part's shape over positions positions.
func (c *cache) shape(part, positions int) []int {
	return []int{1, c.b.kvHeads, positions, c.b.layout[part].width}
}

// reserve makes room for need positions, growing by whole steps, so that
// decoding reallocates only once every cacheStep tokens.
func (c *cache) reserve(t *mlxc.Thread, need int) {
	kv := c.kv
	if need <= kv.capacity {
		return
	}
	capacity := min((need+cacheStep-1)/cacheStep*cacheStep, c.window)
	origin := make([]int, 4)
	for p, bufs := range kv.parts {
		used := c.shape(p, c.n)
		for l, old := range bufs {
			grown := t.Zeros(c.shape(p, capacity), c.b.layout[p].dtype)
			if old != nil && c.n > 0 {
				grown = t.SliceUpdate(grown, t.Slice(old, origin, used), origin, used)
			}
			bufs[l] = replace(t, old, grown)
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

// encode turns keys or values x, (1, kv_heads, n, head_dim) in any float
// dtype, into the cache's parts: x itself in the cache's dtype, or for
// q8_0 its codes, scales and biases.
func (c *cache) encode(t *mlxc.Thread, x *mlxc.Array) []*mlxc.Array {
	if c.b.kvType == engine.KVQ8 {
		codes, scales, biases := t.Quantize(t.AsType(x, mlxc.Float16), q8Group, q8Bits)
		return []*mlxc.Array{codes, scales, biases}
	}
	return []*mlxc.Array{t.AsType(x, c.b.layout[partK].dtype)} // rounded to nearest, ties to even; x itself when it has the type
}

// partsOf lists the parts that hold keys (v false) or values (v true),
// in encode's order.
func (c *cache) partsOf(v bool) []int {
	switch {
	case c.b.kvType != engine.KVQ8 && !v:
		return []int{partK}
	case c.b.kvType != engine.KVQ8:
		return []int{partV}
	case !v:
		return []int{partK, partKScales, partKBiases}
	}
	return []int{partV, partVScales, partVBiases}
}

// append writes k and v, shaped (1, kv_heads, n, head_dim) float32, at
// positions c.n.. of a layer and returns every part of positions
// 0..c.n+n, indexed as kvBuffers.parts.
func (c *cache) append(t *mlxc.Thread, layer, n int, k, v *mlxc.Array) []*mlxc.Array {
	out := make([]*mlxc.Array, len(c.kv.parts))
	origin := make([]int, 4)
	for i, x := range []*mlxc.Array{k, v} {
		enc := c.encode(t, x)
		for j, p := range c.partsOf(i == 1) {
			buf := &c.kv.parts[p][layer]
			start, stop := []int{0, 0, c.n, 0}, c.shape(p, c.n+n)
			*buf = replace(t, *buf, t.SliceUpdate(*buf, enc[j], start, stop))
			out[p] = t.Slice(*buf, origin, stop)
		}
	}
	return out
}

// Export implements engine.Cache: (kv_heads, len, head_dim) per layer in
// the cache's dtype, or for q8_0 the codes, scales and biases
// (engine.KVQuant, group 32, 8 bits, float16 scales), read from the device
// buffers as they are.
func (c *cache) Export() (*engine.KVState, error) {
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := c.b.lostErr(); err != nil {
		return nil, err
	}
	cfg := c.b.cfg
	layers := cfg.NumHiddenLayers
	s := &engine.KVState{Len: c.n, KVHeads: cfg.NumKeyValueHeads, HeadDim: cfg.HeadDim, DType: c.b.kvType.DType()}
	dst := []*[][]byte{&s.K, &s.V}
	if c.b.kvType == engine.KVQ8 {
		q := &engine.KVQuant{Group: q8Group, Bits: q8Bits, ScaleDType: safetensors.F16}
		s.DType, s.Quant = safetensors.U32, q
		dst = append(dst, &q.KScales, &q.KBiases, &q.VScales, &q.VBiases)
	}
	for _, d := range dst {
		*d = make([][]byte, layers)
	}
	err := c.b.lib.Do(func(t *mlxc.Thread) error {
		t.Use(c.b.stream)
		c.b.tell(t, opExport, c.kv.id, 0, nil)
		parts := c.gather(t)
		for p, d := range dst {
			for l := range *d {
				if c.n == 0 {
					(*d)[l] = []byte{}
					continue
				}
				(*d)[l] = t.Bytes(parts[p][l])
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("mlx: exporting the KV cache: %w", err)
	}
	return s, nil
}

// Import implements engine.Cache: a state of any dtype ValidateKV accepts
// is converted to the cache's type on the device (a quantised one
// dequantised first, except 8-bit groups of 32 into a q8_0 cache, which
// are taken as they are, their scales and biases rounded to float16).
func (c *cache) Import(s *engine.KVState) error {
	c.live()
	if err := c.b.checks.Import(c, s); err != nil {
		return err
	}
	if err := c.b.lostErr(); err != nil {
		return err
	}
	err := c.b.lib.Do(func(t *mlxc.Thread) error {
		t.Use(c.b.stream)
		get := fromState(t, s)
		if c.b.sharded() {
			c.b.tell(t, opImport, c.kv.id, s.Len, stateHeader(s))
			get = c.b.broadcast(t, s)
		}
		c.importState(t, s, get)
		return nil
	})
	if err != nil {
		c.broken = err
		return fmt.Errorf("mlx: importing the KV cache: %w", err)
	}
	c.n, c.broken = s.Len, nil
	return nil
}

// importState replaces the cache's contents with s, whose tensors get
// gives on the device; a rank of several keeps its heads.
func (c *cache) importState(t *mlxc.Thread, s *engine.KVState, get kvTensor) {
	kv := c.kv
	kv.free(t)
	c.n = 0
	if s.Len == 0 {
		return
	}
	kv.capacity = min((s.Len+cacheStep-1)/cacheStep*cacheStep, c.window)
	origin := make([]int, 4)
	var all []*mlxc.Array
	for l := range c.b.cfg.NumHiddenLayers {
		for i := range 2 {
			enc := c.decode(t, s, l, i == 1, get)
			for j, p := range c.partsOf(i == 1) {
				x := enc[j]
				if c.b.sharded() {
					w := c.b.kvHeads
					x = t.Slice(x, []int{0, c.b.group.Rank * w, 0, 0}, []int{1, (c.b.group.Rank + 1) * w, s.Len, c.b.layout[p].width})
				}
				buf := t.SliceUpdate(t.Zeros(c.shape(p, kv.capacity), c.b.layout[p].dtype), x, origin, c.shape(p, s.Len))
				kv.parts[p][l] = t.Keep(buf)
				all = append(all, buf)
			}
		}
	}
	t.Eval(all...)
	if t.Err() == nil {
		c.n = s.Len
	}
}

// kvTensor gives one tensor of a KV state's layer on the device, of
// shape and dtype: which is 0 for K, 1 for V, then K's scales and biases
// and V's (a quantised state's).
type kvTensor func(layer, which int, shape []int, dtype mlxc.Dtype) *mlxc.Array

// fromState gives s's tensors from its bytes.
func fromState(t *mlxc.Thread, s *engine.KVState) kvTensor {
	return func(layer, which int, shape []int, dtype mlxc.Dtype) *mlxc.Array {
		return t.FromBytes(stateBytes(s, layer, which), shape, dtype)
	}
}

// stateBytes is the bytes of one tensor of s (see kvTensor).
func stateBytes(s *engine.KVState, layer, which int) []byte {
	switch which {
	case 0:
		return s.K[layer]
	case 1:
		return s.V[layer]
	}
	q := s.Quant
	return [][][]byte{q.KScales, q.KBiases, q.VScales, q.VBiases}[which-2][layer]
}

// decode is a layer's keys (v false) or values (v true) of s on the
// device, as encode gives them for this cache.
func (c *cache) decode(t *mlxc.Thread, s *engine.KVState, layer int, v bool, get kvTensor) []*mlxc.Array {
	kvh, n, hd := s.KVHeads, s.Len, s.HeadDim
	which := 0
	if v {
		which = 1
	}
	q := s.Quant
	if q == nil {
		dt, _ := mlxDtype(s.DType) // F32, F16 or BF16 (ValidateKV)
		return c.encode(t, get(layer, which, []int{1, kvh, n, hd}, dt))
	}
	sdt, _ := mlxDtype(q.ScaleDType)
	groups := []int{1, kvh, n, hd / q.Group}
	codes := get(layer, which, []int{1, kvh, n, hd * q.Bits / 32}, mlxc.Uint32)
	scales, biases := get(layer, 2+2*which, groups, sdt), get(layer, 3+2*which, groups, sdt)
	if c.b.kvType == engine.KVQ8 && q.Group == q8Group && q.Bits == q8Bits {
		return []*mlxc.Array{codes, t.AsType(scales, mlxc.Float16), t.AsType(biases, mlxc.Float16)}
	}
	// dequantised in float32: in the scales' dtype it would round once more
	return c.encode(t, t.Dequantize(codes, t.AsType(scales, mlxc.Float32), t.AsType(biases, mlxc.Float32), q.Group, q.Bits))
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
