package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/half"
)

// cacheBlock is how many positions the cache grows by at a time.
const cacheBlock = 256

// cache holds keys and values in the cache's type (engine.KVType), in
// blocks of positions that are allocated as the sequence grows and never
// moved. A plane keeps each block per kv head, (block, head_dim): one
// head's keys (or values) for consecutive positions are contiguous, so
// attention reads them front to back, one kernel call per block, in their
// stored type (the kernels widen 16-bit values and q8_0 codes in
// registers). The whole blocks of a restored session may lie in place in
// its file's copy-on-write mapping (Import, engine.KVState.Hold), which
// holds each head's positions contiguous too.
type cache struct {
	checks           *engine.Checks // the backend's, for Import
	typ              engine.KVType
	n, window        int
	kvHeads, headDim int
	block            int     // positions per block
	k, v             []plane // per layer
	closed           bool
	// held lets go of the mappings whose blocks the planes use in place
	// (a pointer, so that a cache dropped unclosed lets go of them in a
	// cleanup that does not keep it alive).
	held *[]func() error
}

// plane is one layer's keys or values, block by block and within a block
// head by head: [b·kv_heads+h] is block b of head h. Only the slices of
// the cache's type are used.
type plane struct {
	f [][]float32 // f32
	h [][]uint16  // f16, bf16
	q [][]int8    // q8_0 codes
	s [][]float32 // q8_0 scales (f16 values), one per engine.Q8Block codes
}

var _ engine.Cache = (*cache)(nil)

func newCache(checks *engine.Checks, typ engine.KVType, layers, kvHeads, headDim, window int) *cache {
	c := &cache{checks: checks, typ: typ, window: window, kvHeads: kvHeads, headDim: headDim, block: min(cacheBlock, window),
		k: make([]plane, layers), v: make([]plane, layers), held: new([]func() error)}
	runtime.AddCleanup(c, func(held *[]func() error) { releaseAll(held, nil) }, c.held)
	return c
}

func (c *cache) Len() int    { return c.n }
func (c *cache) Window() int { return c.window }
func (c *cache) kvDim() int  { return c.kvHeads * c.headDim }

// blocks is how many blocks of positions are allocated.
func (c *cache) blocks() int {
	p := &c.k[0]
	return max(len(p.f), len(p.h), len(p.q)) / c.kvHeads
}

// capacity is how many positions the allocated blocks hold.
func (c *cache) capacity() int { return c.blocks() * c.block }

// Close drops the blocks, so that their memory is freed even while the
// cache is still referenced, and lets go of the mappings it used.
func (c *cache) Close() error {
	c.k, c.v, c.closed = nil, nil, true
	return c.release(nil)
}

// release lets go of the mappings held, keeping keep.
func (c *cache) release(keep []func() error) error {
	return releaseAll(c.held, keep)
}

// releaseAll calls the releases in held, which then holds keep.
func releaseAll(held *[]func() error, keep []func() error) error {
	var errs []error
	for _, r := range *held {
		errs = append(errs, r())
	}
	*held = keep
	return errors.Join(errs...)
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

// at is where positions [p, p+m) of kv head h lie in their block: the
// block and the offset of the first element; they must lie in one block.
func (c *cache) at(h, p int) (blk, off int) {
	return p/c.block*c.kvHeads + h, p % c.block * c.headDim
}

// reserve makes room for n positions a block at a time, so the per-token
// path allocates only once every block of tokens: one allocation for
// every layer's keys and values of a block. (Anonymous mappings with
// huge pages asked for made a fresh cache slower to fill in the VMs this
// was measured on, not faster: a 2,048-token restore of the 1B shape
// took 84 ms into them against 36 ms into Go's heap; docs/RATIONALE.md.)
// It returns the regions it allocated.
func (c *cache) reserve(n int) [][]byte {
	var regions [][]byte
	size := c.block * c.headDim // elements of a head's keys (or values) in a block
	// A head's block in bytes, on a cache line; q8_0's scales after its
	// codes.
	codes := size * max(c.typ.DType().Size(), 1)
	headBytes := (codes + size/engine.Q8Block*4 + 63) &^ 63
	for c.capacity() < n {
		region := make([]byte, 2*len(c.k)*c.kvHeads*headBytes)
		regions = append(regions, region)
		for l := range c.k {
			for range c.kvHeads {
				for _, p := range []*plane{&c.k[l], &c.v[l]} {
					b := region[:headBytes:headBytes]
					region = region[headBytes:]
					switch c.typ {
					case engine.KVF32:
						p.f = append(p.f, unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), size))
					case engine.KVF16, engine.KVBF16:
						p.h = append(p.h, unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), size))
					default:
						p.q = append(p.q, unsafe.Slice((*int8)(unsafe.Pointer(&b[0])), size))
						p.s = append(p.s, unsafe.Slice((*float32)(unsafe.Pointer(&b[codes])), size/engine.Q8Block))
					}
				}
			}
		}
	}
	return regions
}

// store writes the keys and values of n tokens, each (kv_heads, head_dim),
// at positions [p, p+n) of a layer, rounding them to the cache's type.
func (c *cache) store(ks *kernelSet, layer, p, n int, k, v []float32) {
	hd := c.headDim
	for b := 0; b < n; b++ {
		for h := 0; h < c.kvHeads; h++ {
			src := b*c.kvDim() + h*hd
			blk, off := c.at(h, p+b)
			c.k[layer].put(ks, c.typ, blk, off, k[src:src+hd])
			c.v[layer].put(ks, c.typ, blk, off, v[src:src+hd])
		}
	}
}

// put writes x at element off of block blk in type typ, on ks's kernels.
func (pl *plane) put(ks *kernelSet, typ engine.KVType, blk, off int, x []float32) {
	switch typ {
	case engine.KVF32:
		copy(pl.f[blk][off:], x)
	case engine.KVF16:
		ks.narrowF16(pl.h[blk][off:off+len(x)], x)
	case engine.KVBF16:
		dst := pl.h[blk][off : off+len(x)]
		for i, v := range x {
			dst[i] = half.F32ToBF16(v)
		}
	default:
		engine.QuantizeQ8(pl.q[blk][off:off+len(x)], pl.s[blk][off/engine.Q8Block:], x)
	}
}

// dot sets out[i] to the product of x with the row of position i of a
// span starting at element off of block blk (len(out) positions of
// len(x) elements).
func (pl *plane) dot(ks *kernelSet, typ engine.KVType, out []float32, blk, off int, x []float32) {
	n := len(out) * len(x)
	switch typ {
	case engine.KVF32:
		ks.gemvF32(out, pl.f[blk][off:off+n], x)
	case engine.KVF16:
		ks.gemvF16(out, pl.h[blk][off:off+n], x)
	case engine.KVBF16:
		ks.gemvBF16(out, pl.h[blk][off:off+n], x)
	default:
		ks.gemvQ8_0(out, pl.q[blk][off:off+n], pl.s[blk][off/engine.Q8Block:(off+n)/engine.Q8Block], x)
	}
}

// axpy adds to out the rows of a span starting at element off of block
// blk, row i times a[i] (len(a) positions of len(out) elements).
func (pl *plane) axpy(ks *kernelSet, typ engine.KVType, out []float32, blk, off int, a []float32) {
	n := len(out) * len(a)
	switch typ {
	case engine.KVF32:
		ks.gemvT(out, pl.f[blk][off:off+n], a)
	case engine.KVF16:
		ks.gemvTF16(out, pl.h[blk][off:off+n], a)
	case engine.KVBF16:
		ks.gemvTBF16(out, pl.h[blk][off:off+n], a)
	default:
		ks.gemvTQ8_0(out, pl.q[blk][off:off+n], pl.s[blk][off/engine.Q8Block:(off+n)/engine.Q8Block], a)
	}
}

// each calls f with the first position, block, offset and length of each
// span of kv head h that holds positions [from, to), in order.
func (c *cache) each(h, from, to int, f func(p, blk, off, m int)) {
	for p := from; p < to; {
		blk, off := c.at(h, p)
		m := min(c.block-p%c.block, to-p)
		f(p, blk, off, m)
		p += m
	}
}

// Export copies the used positions out in the cache's type: (kv_heads,
// len, head_dim) elements, or for q8_0 mlx-lm's 8-bit groups of 32
// (engine.KVQuant).
func (c *cache) Export() (*engine.KVState, error) {
	c.live()
	s := &engine.KVState{Len: c.n, KVHeads: c.kvHeads, HeadDim: c.headDim, DType: c.typ.DType(),
		K: make([][]byte, len(c.k)), V: make([][]byte, len(c.v))}
	if c.typ == engine.KVQ8 {
		s.DType = safetensors.U32
		s.Quant = &engine.KVQuant{Group: engine.Q8Block, Bits: 8, ScaleDType: safetensors.F16}
	}
	for l := range c.k {
		for i, pl := range [2]*plane{&c.k[l], &c.v[l]} {
			data, scales, biases := c.exportPlane(pl)
			if i == 0 {
				s.K[l] = data
			} else {
				s.V[l] = data
			}
			if q := s.Quant; q != nil && i == 0 {
				q.KScales, q.KBiases = append(q.KScales, scales), append(q.KBiases, biases)
			} else if q != nil {
				q.VScales, q.VBiases = append(q.VScales, scales), append(q.VBiases, biases)
			}
		}
	}
	return s, nil
}

// exportPlane is a plane's used positions, and for q8_0 their scales and
// biases.
func (c *cache) exportPlane(pl *plane) (data, scales, biases []byte) {
	size := c.typ.DType().Size()
	if c.typ == engine.KVQ8 {
		size = 1
		scales = make([]byte, 0, c.n*c.kvDim()/engine.Q8Block*2)
		biases = make([]byte, 0, cap(scales))
	}
	data = make([]byte, 0, c.n*c.kvDim()*size)
	for h := 0; h < c.kvHeads; h++ {
		c.each(h, 0, c.n, func(_, blk, off, m int) {
			n := m * c.headDim
			switch c.typ {
			case engine.KVF32:
				data = append(data, bytesOf(pl.f[blk][off:off+n])...)
			case engine.KVF16, engine.KVBF16:
				data = append(data, bytesOf(pl.h[blk][off:off+n])...)
			default:
				for _, q := range pl.q[blk][off : off+n] {
					data = append(data, byte(int(q)+128))
				}
				for _, d := range pl.s[blk][off/engine.Q8Block : (off+n)/engine.Q8Block] {
					scales = binary.LittleEndian.AppendUint16(scales, half.F32ToF16(d))
					biases = binary.LittleEndian.AppendUint16(biases, half.F32ToF16(-128*d))
				}
			}
		})
	}
	return data, scales, biases
}

// bytesOf views a slice of numbers as its little-endian bytes.
func bytesOf[T float32 | uint16](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// Import replaces the contents with s, checked against the model and the
// window. A state of the cache's own type whose memory may be written
// (engine.KVState.Hold: a session file mapped copy-on-write) is used in
// place for its whole blocks, and only the positions after them copied;
// another state of the cache's type is copied a span at a time; one of
// another type is converted first (engine.KVState.Convert).
func (c *cache) Import(s *engine.KVState) error {
	c.live()
	if err := c.checks.Import(c, s); err != nil {
		return err
	}
	s = s.Convert(c.typ)
	c.n = 0
	var keep []func() error
	from := 0 // the first position copied
	if full := s.Len / c.block; full > 0 && s.Hold != nil && c.adoptable(s) {
		if release := s.Hold(); release != nil {
			keep = []func() error{release}
			c.adopt(s, full)
			from = full * c.block
			prefaultRead(append(slices.Clone(s.K), s.V...), min(runtime.GOMAXPROCS(0), len(c.k)))
		}
	}
	if keep == nil && len(*c.held) > 0 {
		c.dropBlocks() // they lie in a mapping let go of below
	}
	workers := min(runtime.GOMAXPROCS(0), len(c.k))
	// Into fresh blocks the copy is as much the kernel giving it the
	// pages it touches first as the copy itself: the new blocks are
	// faulted in first, many pages a call, on every core.
	prefault(c.reserve(s.Len), workers)
	// The layers are copied on every core at once.
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for l := w; l < len(c.k); l += workers {
				c.importPlane(&c.k[l], s.K[l], s, l, from, false)
				c.importPlane(&c.v[l], s.V[l], s, l, from, true)
			}
		})
	}
	wg.Wait()
	c.n = s.Len
	return c.release(keep) // the mappings of an earlier state, no longer used
}

// adoptable reports whether s's tensors can be the cache's blocks in
// place: float elements of the cache's type, aligned for it.
func (c *cache) adoptable(s *engine.KVState) bool {
	size := c.typ.DType().Size()
	if c.typ == engine.KVQ8 || s.Quant != nil || s.DType != c.typ.DType() {
		return false
	}
	for _, t := range append(slices.Clone(s.K), s.V...) {
		if len(t) > 0 && uintptr(unsafe.Pointer(&t[0]))%uintptr(size) != 0 {
			return false
		}
	}
	return true
}

// adopt makes the first full blocks of every plane views of s's tensors,
// (kv_heads, len, head_dim) each, dropping the blocks held before.
func (c *cache) adopt(s *engine.KVState, full int) {
	c.dropBlocks()
	size := c.typ.DType().Size()
	span := c.block * c.headDim // elements of a head's block
	for l := range c.k {
		for i, pl := range [2]*plane{&c.k[l], &c.v[l]} {
			src := s.K[l]
			if i == 1 {
				src = s.V[l]
			}
			for b := range full {
				for h := range c.kvHeads {
					at := ((h*s.Len + b*c.block) * c.headDim) * size
					view := src[at : at+span*size]
					if c.typ == engine.KVF32 {
						pl.f = append(pl.f, asF32(view))
					} else {
						pl.h = append(pl.h, asU16(view))
					}
				}
			}
		}
	}
}

// dropBlocks forgets every block, to be allocated again.
func (c *cache) dropBlocks() {
	for l := range c.k {
		c.k[l], c.v[l] = plane{}, plane{}
	}
}

// importPlane copies positions [from, len) of src, a tensor of s (its
// layer l's values or keys), into a plane.
func (c *cache) importPlane(pl *plane, src []byte, s *engine.KVState, l, from int, values bool) {
	n := s.Len
	for h := 0; h < c.kvHeads; h++ {
		c.each(h, from, n, func(p, blk, off, m int) {
			i := (h*n + p) * c.headDim // the span's first element in src
			e := m * c.headDim
			switch c.typ {
			case engine.KVF32:
				copy(pl.f[blk][off:off+e], asF32(src[4*i:4*(i+e)]))
			case engine.KVF16, engine.KVBF16:
				copy(pl.h[blk][off:off+e], asU16(src[2*i:2*(i+e)]))
			default:
				for j, b := range src[i : i+e] {
					pl.q[blk][off+j] = int8(int(b) - 128)
				}
				scales := s.Quant.KScales[l]
				if values {
					scales = s.Quant.VScales[l]
				}
				g := i / engine.Q8Block
				for j := range e / engine.Q8Block {
					pl.s[blk][off/engine.Q8Block+j] = half.F16ToF32(binary.LittleEndian.Uint16(scales[2*(g+j):]))
				}
			}
		})
	}
}

// has4 says whether ks has four-head attention for the cache's type and
// head_dim hd.
func (ks *kernelSet) has4(typ engine.KVType, hd int) bool {
	switch {
	case hd%16 != 0:
		return false
	case typ == engine.KVF16 || typ == engine.KVBF16:
		return ks.scores4[halfIndex(typ)] != nil
	case typ == engine.KVQ8:
		return ks.scores4Q8 != nil
	}
	return false
}

func halfIndex(typ engine.KVType) int {
	if typ == engine.KVBF16 {
		return 1
	}
	return 0
}

// dot4 is dot for four query heads at once: out[h·stride + i] for h < 4
// and i < m, q holding the four heads one after another. The kernel set
// must have it (has4).
func (pl *plane) dot4(ks *kernelSet, typ engine.KVType, out []float32, stride, blk, off, m int, q []float32) {
	hd := len(q) / 4
	_ = out[3*stride+m-1]
	if typ == engine.KVQ8 {
		codes, scales := pl.q[blk][off:off+m*hd], pl.s[blk][off/engine.Q8Block:(off+m*hd)/engine.Q8Block]
		ks.scores4Q8(&out[0], stride, &codes[0], &scales[0], &q[0], m, hd)
		return
	}
	k := pl.h[blk][off : off+m*hd]
	ks.scores4[halfIndex(typ)](&out[0], stride, &k[0], &q[0], m, hd)
}

// axpy4 is axpy for four query heads at once: out holds the four heads'
// sums one after another, a[h·stride + i] the weight of row i for head h.
func (pl *plane) axpy4(ks *kernelSet, typ engine.KVType, out []float32, blk, off, m int, a []float32, stride int) {
	hd := len(out) / 4
	_ = a[3*stride+m-1]
	if typ == engine.KVQ8 {
		codes, scales := pl.q[blk][off:off+m*hd], pl.s[blk][off/engine.Q8Block:(off+m*hd)/engine.Q8Block]
		ks.values4Q8(&out[0], &codes[0], &scales[0], &a[0], stride, m, hd)
		return
	}
	v := pl.h[blk][off : off+m*hd]
	ks.values4[halfIndex(typ)](&out[0], &v[0], &a[0], stride, m, hd)
}

// prefetchNext asks for the first 2 KiB of the block after a span of n
// positions from element off of block blk of a 16-bit plane, when the
// span runs to its block's end: the next block is another allocation,
// which the kernels' own prefetches, within the span, do not reach.
func (c *cache) prefetchNext(pl *plane, blk, off, n int) {
	if next := blk + c.kvHeads; next < len(pl.h) && len(pl.h[next]) > 0 && off+n*c.headDim == c.block*c.headDim {
		prefetch(unsafe.Pointer(&pl.h[next][0]), 2048)
	}
}
