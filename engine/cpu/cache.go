package cpu

import (
	"fmt"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// cacheBlock is how many positions the cache grows by at a time.
const cacheBlock = 256

// cache holds f32 keys and values in blocks of positions that are
// allocated as the sequence grows and never moved. A block of a layer is
// laid out (kv_heads, block, head_dim): one head's keys (or values) for
// consecutive positions are contiguous, so attention reads them front to
// back, one kernel call per block.
type cache struct {
	checks           *engine.Checks // the backend's, for Import
	n, window        int
	kvHeads, headDim int
	block            int           // positions per block
	k, v             [][][]float32 // per layer, per block
	closed           bool
}

var _ engine.Cache = (*cache)(nil)

func newCache(checks *engine.Checks, layers, kvHeads, headDim, window int) *cache {
	return &cache{checks: checks, window: window, kvHeads: kvHeads, headDim: headDim, block: min(cacheBlock, window),
		k: make([][][]float32, layers), v: make([][][]float32, layers)}
}

func (c *cache) Len() int    { return c.n }
func (c *cache) Window() int { return c.window }
func (c *cache) kvDim() int  { return c.kvHeads * c.headDim }

// capacity is how many positions the allocated blocks hold.
func (c *cache) capacity() int { return len(c.k[0]) * c.block }

// Close drops the blocks, so that their memory is freed even while the
// cache is still referenced.
func (c *cache) Close() error {
	c.k, c.v, c.closed = nil, nil, true
	return nil
}

// live panics when the cache is closed.
func (c *cache) live() {
	if c.closed {
		panic("cpu: use of a closed cache")
	}
}

func (c *cache) Truncate(n int) {
	c.live()
	if n < 0 || n > c.n {
		panic(fmt.Sprintf("cpu cache: Truncate(%d) outside [0, %d]", n, c.n))
	}
	c.n = n
}

// span returns positions [p, p+m) of kv head h in a layer's keys or
// values; they must lie in one block.
func (c *cache) span(blocks [][]float32, h, p, m int) []float32 {
	off := (h*c.block + p%c.block) * c.headDim
	return blocks[p/c.block][off : off+m*c.headDim]
}

// reserve makes room for n positions a block at a time, so the per-token
// path allocates only once every block of tokens.
func (c *cache) reserve(n int) {
	for c.capacity() < n {
		for l := range c.k {
			c.k[l] = append(c.k[l], make([]float32, c.block*c.kvDim()))
			c.v[l] = append(c.v[l], make([]float32, c.block*c.kvDim()))
		}
	}
}

// store writes the keys and values of n tokens, each (kv_heads, head_dim),
// at positions [p, p+n) of a layer.
func (c *cache) store(layer, p, n int, k, v []float32) {
	hd := c.headDim
	for b := 0; b < n; b++ {
		for h := 0; h < c.kvHeads; h++ {
			src := b*c.kvDim() + h*hd
			copy(c.span(c.k[layer], h, p+b, 1), k[src:src+hd])
			copy(c.span(c.v[layer], h, p+b, 1), v[src:src+hd])
		}
	}
}

// each calls f with the spans of kv head h that hold positions [0, n), in
// order.
func (c *cache) each(blocks [][]float32, h, n int, f func(p int, s []float32)) {
	for p := 0; p < n; p += c.block {
		f(p, c.span(blocks, h, p, min(c.block, n-p)))
	}
}

// Export copies the used positions out as (kv_heads, len, head_dim) f32.
func (c *cache) Export() (*engine.KVState, error) {
	c.live()
	s := &engine.KVState{Len: c.n, KVHeads: c.kvHeads, HeadDim: c.headDim, DType: safetensors.F32,
		K: make([][]byte, len(c.k)), V: make([][]byte, len(c.v))}
	for l := range c.k {
		s.K[l] = c.exportLayer(c.k[l])
		s.V[l] = c.exportLayer(c.v[l])
	}
	return s, nil
}

func (c *cache) exportLayer(blocks [][]float32) []byte {
	out := make([]byte, 0, c.n*c.kvDim()*4)
	for h := 0; h < c.kvHeads; h++ {
		c.each(blocks, h, c.n, func(_ int, s []float32) {
			out = append(out, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))...)
		})
	}
	return out
}

// Import replaces the contents with s, checked against the model and the
// window, converting from s's dtype. Both layouts are head-major, so an
// f32 state is copied a head at a time.
func (c *cache) Import(s *engine.KVState) error {
	c.live()
	if err := c.checks.Import(c, s); err != nil {
		return err
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

func (c *cache) importLayer(blocks [][]float32, src []byte, n int, dtype safetensors.DType) {
	for h := 0; h < c.kvHeads; h++ {
		c.each(blocks, h, n, func(p int, s []float32) {
			i := h*n*c.headDim + p*c.headDim // the span's first element in src
			switch dtype {
			case safetensors.F32:
				copy(s, asF32(src[4*i:4*(i+len(s))]))
			case safetensors.BF16:
				kern.widenBF16(s, asU16(src[2*i:2*(i+len(s))]))
			default:
				kern.widenF16(s, asU16(src[2*i:2*(i+len(s))]))
			}
		})
	}
}
