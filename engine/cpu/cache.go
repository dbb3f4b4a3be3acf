package cpu

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// cacheChunk is how many positions the cache grows by at a time.
const cacheChunk = 256

// cache holds f32 keys and values, per layer laid out (kv_heads, capacity,
// head_dim): one head's keys (or values) for consecutive positions are
// contiguous, so attention reads them front to back in one kernel call.
type cache struct {
	n, window        int
	kvHeads, headDim int
	capacity         int         // positions allocated per head
	k, v             [][]float32 // per layer
}

var _ engine.Cache = (*cache)(nil)

func newCache(layers, kvHeads, headDim, window int) *cache {
	return &cache{window: window, kvHeads: kvHeads, headDim: headDim, k: make([][]float32, layers), v: make([][]float32, layers)}
}

func (c *cache) Len() int    { return c.n }
func (c *cache) Window() int { return c.window }
func (c *cache) kvDim() int  { return c.kvHeads * c.headDim }

func (c *cache) Truncate(n int) {
	if n < 0 || n > c.n {
		panic(fmt.Sprintf("cpu cache: Truncate(%d) outside [0, %d]", n, c.n))
	}
	c.n = n
}

// head returns the first n positions of kv head h in a layer's keys or
// values.
func (c *cache) head(layer []float32, h, n int) []float32 {
	off := h * c.capacity * c.headDim
	return layer[off : off+n*c.headDim]
}

// reserve makes room for n positions, growing by whole chunks, so the
// per-token path allocates only once every cacheChunk tokens.
func (c *cache) reserve(n int) {
	if n <= c.capacity {
		return
	}
	capacity := min((n+cacheChunk-1)/cacheChunk*cacheChunk, c.window)
	for l := range c.k {
		c.k[l] = c.grow(c.k[l], capacity)
		c.v[l] = c.grow(c.v[l], capacity)
	}
	c.capacity = capacity
}

func (c *cache) grow(s []float32, capacity int) []float32 {
	g := make([]float32, c.kvHeads*capacity*c.headDim)
	for h := 0; h < c.kvHeads; h++ {
		copy(g[h*capacity*c.headDim:], c.head(s, h, c.n))
	}
	return g
}

// store writes the keys and values of n tokens, each (kv_heads, head_dim),
// at positions [p, p+n) of a layer.
func (c *cache) store(layer, p, n int, k, v []float32) {
	hd := c.headDim
	for h := 0; h < c.kvHeads; h++ {
		kh, vh := c.head(c.k[layer], h, p+n)[p*hd:], c.head(c.v[layer], h, p+n)[p*hd:]
		for b := 0; b < n; b++ {
			src := b*c.kvDim() + h*hd
			copy(kh[b*hd:(b+1)*hd], k[src:src+hd])
			copy(vh[b*hd:(b+1)*hd], v[src:src+hd])
		}
	}
}

// Export copies the used positions out as (kv_heads, len, head_dim) f32.
func (c *cache) Export() (*engine.KVState, error) {
	s := &engine.KVState{Len: c.n, KVHeads: c.kvHeads, HeadDim: c.headDim, DType: safetensors.F32,
		K: make([][]byte, len(c.k)), V: make([][]byte, len(c.v))}
	for l := range c.k {
		s.K[l] = c.exportLayer(c.k[l])
		s.V[l] = c.exportLayer(c.v[l])
	}
	return s, nil
}

func (c *cache) exportLayer(src []float32) []byte {
	out := make([]byte, 0, c.n*c.kvDim()*4)
	for h := 0; h < c.kvHeads; h++ {
		for _, v := range c.head(src, h, c.n) {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
		}
	}
	return out
}

// Import replaces the contents with s (already validated against the
// model), converting from s's dtype. Both layouts are head-major, so an
// f32 state is copied a head at a time.
func (c *cache) Import(s *engine.KVState) error {
	if s.KVHeads != c.kvHeads || s.HeadDim != c.headDim || len(s.K) != len(c.k) || s.Len > c.window {
		return fmt.Errorf("cpu cache: KV state shape does not match the model")
	}
	switch s.DType {
	case safetensors.F32, safetensors.BF16, safetensors.F16:
	default:
		return fmt.Errorf("cpu cache: KV dtype %s not supported", s.DType)
	}
	c.n = 0
	c.reserve(s.Len)
	for l := range c.k {
		c.importLayer(c.k[l], s.K[l], s.Len, s.DType)
		c.importLayer(c.v[l], s.V[l], s.Len, s.DType)
	}
	c.n = s.Len
	return nil
}

func (c *cache) importLayer(dst []float32, src []byte, n int, dtype safetensors.DType) {
	size := n * c.headDim // elements of one head
	for h := 0; h < c.kvHeads; h++ {
		row := c.head(dst, h, n)
		switch dtype {
		case safetensors.F32:
			copy(row, asF32(src[4*h*size:4*(h+1)*size]))
		case safetensors.BF16:
			for j := range row {
				row[j] = bf16(binary.LittleEndian.Uint16(src[2*(h*size+j):]))
			}
		default:
			tab := f16Table()
			for j := range row {
				row[j] = tab[binary.LittleEndian.Uint16(src[2*(h*size+j):])]
			}
		}
	}
}
