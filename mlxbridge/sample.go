package mlxbridge

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// Sampling on the device (engine.DeviceSampler): the logits of the last
// token stay in MLX, the controller's mask goes to MLX as the guest's own
// memory pages (Thread.Wrap: no copy where MLX can map them), and the
// whole of the Sampler's rule (Sampler.pick) runs as one MLX graph whose
// only outputs are two int32 scalars: the token and the unrestricted top.

var _ engine.DeviceSampler = (*Backend)(nil)

// SamplesOnDevice implements engine.DeviceSampler: true with mlx-c 0.5.0
// or newer (mlx_array_new_data_managed), unless Options.SampleOnHost.
func (b *Backend) SamplesOnDevice() bool { return b.onDevice }

// ForwardKeep implements engine.DeviceSampler.
func (b *Backend) ForwardKeep(ec engine.Cache, tokens []int32) error {
	c, err := b.cacheOf(ec)
	if err != nil {
		return err
	}
	if err := b.checks.Tokens(c, tokens); err != nil {
		return err
	}
	return b.feed(c, tokens, false, func(t *mlxc.Thread, res *mlxc.Array) {
		t.Free(c.kv.logits)
		c.kv.logits = t.Keep(t.Reshape(res, b.cfg.VocabSize))
	})
}

// ReadLogits implements engine.DeviceSampler.
func (b *Backend) ReadLogits(ec engine.Cache, logits []float32) error {
	c, err := b.kept(ec)
	if err != nil {
		return err
	}
	return b.lib.Do(func(t *mlxc.Thread) error {
		t.Use(b.stream)
		copy(logits, t.Float32s(c.kv.logits))
		return nil
	})
}

// kept is ec as this backend's cache holding logits from ForwardKeep.
func (b *Backend) kept(ec engine.Cache) (*cache, error) {
	c, err := b.cacheOf(ec)
	if err == nil && c.kv.logits == nil {
		err = fmt.Errorf("mlx: no logits to pick from: ForwardKeep has not run on this cache")
	}
	return c, err
}

// vocabArrays is what Pick needs per token of the vocabulary: its id
// (also the rank of a sorted position), and the word and bit of the
// controller's mask that allow it.
type vocabArrays struct {
	ids, word, bit *mlxc.Array // int32, int32, uint32 1<<(id%32)
}

func (v *vocabArrays) free(t *mlxc.Thread) {
	if v != nil {
		t.Free(v.ids)
		t.Free(v.word)
		t.Free(v.bit)
	}
}

// vocabulary makes the vocabulary's arrays on first use.
func (b *Backend) vocabulary(t *mlxc.Thread) *vocabArrays {
	if b.vocab != nil {
		return b.vocab
	}
	n := b.cfg.VocabSize
	ids, word, bit := make([]int32, n), make([]int32, n), make([]uint32, n)
	for i := range ids {
		ids[i], word[i], bit[i] = int32(i), int32(i/32), 1<<(i%32)
	}
	v := &vocabArrays{
		ids:  t.FromBytes(int32Bytes(ids), []int{n}, mlxc.Int32),
		word: t.FromBytes(int32Bytes(word), []int{n}, mlxc.Int32),
		bit:  t.FromBytes(unsafe.Slice((*byte)(unsafe.Pointer(&bit[0])), 4*n), []int{n}, mlxc.Uint32),
	}
	t.Eval(v.ids, v.word, v.bit)
	if t.Err() == nil {
		t.Keep(v.ids)
		t.Keep(v.word)
		t.Keep(v.bit)
		b.vocab = v
	}
	return v
}

func int32Bytes(v []int32) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v)) }

// Pick implements engine.DeviceSampler: the Sampler's rule (see
// Sampler.pick) as one MLX graph, evaluated once; only the two ids come
// back.
func (b *Backend) Pick(ec engine.Cache, p *engine.Pick) (tok, top int32, err error) {
	c, err := b.kept(ec)
	if err != nil {
		return 0, 0, err
	}
	var out [2]int32
	err = b.lib.Do(func(t *mlxc.Thread) error {
		t.Use(b.stream)
		v := b.vocabulary(t)
		raw := c.kv.logits
		negInf := t.Float(float32(math.Inf(-1)))
		clean := t.Where(t.IsNaN(raw), negInf, raw) // a NaN is never picked, as on the host
		topOut := t.Where(t.Greater(t.Max(clean), negInf), t.AsType(t.Argmax(clean), mlxc.Int32), t.Int(-1))
		l := b.penalise(t, raw, p)
		nan := t.IsNaN(l)
		if l != raw {
			clean = t.Where(nan, negInf, l)
		}
		m := clean
		if allowed := b.allowed(t, v, p); allowed != nil {
			m = t.Where(allowed, clean, negInf)
			nan = t.And(allowed, nan)
		}
		maxL := t.Max(m)
		pick := t.AsType(t.Argmax(m), mlxc.Int32)
		if p.Temperature != 0 {
			pick = b.draw(t, v, m, maxL, p)
		}
		// As the host: nothing allowed is -1 (NonFinite when a NaN was
		// among the allowed), a +Inf maximum NonFinite.
		posInf := t.Float(float32(math.Inf(1)))
		none := t.Where(t.Any(nan), t.Int(engine.NonFinite), t.Int(-1))
		tokOut := t.Where(t.Less(maxL, posInf), t.Where(t.Greater(maxL, negInf), pick, none), t.Int(engine.NonFinite))
		t.Int32s(out[:], tokOut, topOut)
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("mlx: %w", err)
	}
	return out[0], out[1], nil
}

// penalise is l with the repetition penalty applied to p.Penalised's
// tokens (l itself when there is none): positive logits divided by it,
// the others multiplied. Writing a repeated token twice writes the same
// value, so each distinct token is penalised once, as on the host.
func (b *Backend) penalise(t *mlxc.Thread, l *mlxc.Array, p *engine.Pick) *mlxc.Array {
	if p.RepeatPenalty == 1 {
		return l
	}
	ids := b.inVocabulary(p.Penalised)
	if len(ids) == 0 {
		return l
	}
	h := t.FromBytes(int32Bytes(ids), []int{len(ids)}, mlxc.Int32)
	old, pen := t.Take(l, h, 0), t.Float(float32(p.RepeatPenalty))
	return t.PutAlongAxis(l, h, t.Where(t.Greater(old, t.Float(0)), t.Divide(old, pen), t.Multiply(old, pen)), 0)
}

// inVocabulary is the ids of ids inside the vocabulary, in scratch.
func (b *Backend) inVocabulary(ids []int32) []int32 {
	out := b.scratch[:0]
	for _, id := range ids {
		if id >= 0 && int(id) < b.cfg.VocabSize {
			out = append(out, id)
		}
	}
	b.scratch = out
	return out
}

// allowed is the boolean vector of the tokens p allows, or nil when it
// allows every one.
func (b *Backend) allowed(t *mlxc.Thread, v *vocabArrays, p *engine.Pick) *mlxc.Array {
	n := b.cfg.VocabSize
	switch {
	case p.Mask != nil:
		words := b.maskWords(t, p)
		return t.NotEqual(t.BitwiseAnd(t.Take(words, v.word, 0), v.bit), t.AsType(t.Int(0), mlxc.Uint32))
	case p.Allowed != nil:
		ids := b.inVocabulary(p.Allowed)
		none := t.Zeros([]int{n}, mlxc.Float32)
		if len(ids) == 0 {
			return t.Greater(none, none)
		}
		idx := t.FromBytes(int32Bytes(ids), []int{len(ids)}, mlxc.Int32)
		return t.Greater(t.PutAlongAxis(none, idx, t.Float(1), 0), t.Float(0))
	}
	return nil
}

// maskWords is the mask's words as an MLX array: a view into the
// guest's pages where the directive gave them (the array wraps whole
// pages, which Metal can map without a copy), else a copy.
func (b *Backend) maskWords(t *mlxc.Thread, p *engine.Pick) *mlxc.Array {
	words := (b.cfg.VocabSize + 31) / 32
	mask := p.Mask
	if len(mask) < words { // bits past the mask allow nothing
		mask = append(make([]uint32, 0, words), mask...)
		mask = mask[:words]
	}
	mask = mask[:words]
	if off, ok := within(p.MaskPages, mask); ok {
		all := t.Wrap(unsafe.Slice((*uint32)(unsafe.Pointer(&p.MaskPages[0])), len(p.MaskPages)/4))
		return t.Slice(all, []int{off}, []int{off + words})
	}
	return t.FromBytes(unsafe.Slice((*byte)(unsafe.Pointer(&mask[0])), 4*words), []int{words}, mlxc.Uint32)
}

// within says where mask lies in pages, in words, when it lies inside
// them on a word boundary.
func within(pages []byte, mask []uint32) (off int, ok bool) {
	if len(pages) < 4 || len(pages)%4 != 0 {
		return 0, false
	}
	lo, m := uintptr(unsafe.Pointer(&pages[0])), uintptr(unsafe.Pointer(&mask[0]))
	if lo%4 != 0 || m < lo || m%4 != 0 || m+4*uintptr(len(mask)) > lo+uintptr(len(pages)) {
		return 0, false
	}
	return int(m-lo) / 4, true
}

// draw is the Sampler's weighted pick among m's finite logits (maxL
// their largest): the weights exp((l − max)/T), min_p, top_k and top_p
// cuts made on the weights sorted heaviest first, and the walk in id
// order to the first running sum past Draw times the total.
func (b *Backend) draw(t *mlxc.Thread, v *vocabArrays, m, maxL *mlxc.Array, p *engine.Pick) *mlxc.Array {
	zero := t.Float(0)
	w := t.Exp(t.Multiply(t.Subtract(m, maxL), t.Float(float32(1/p.Temperature))))
	ws := t.Where(t.And(t.Greater(w, zero), t.GreaterEqual(w, t.Float(float32(p.MinP)))), w, zero)
	if p.TopK > 0 || p.TopP < 1 {
		order := t.Argsort(t.Negative(ws)) // heaviest first, ties by id (a stable sort)
		sorted := t.Take(ws, order, 0)
		keep := t.Greater(sorted, zero)
		if p.TopK > 0 && p.TopK < b.cfg.VocabSize {
			keep = t.And(keep, t.Less(v.ids, t.Int(int32(p.TopK))))
		}
		if p.TopP < 1 {
			heads := t.Where(keep, sorted, zero)
			target := t.Multiply(t.Float(float32(p.TopP)), t.Sum(heads))
			keep = t.And(keep, t.Less(t.CumSum(heads, 0, false), target))
		}
		kept := t.PutAlongAxis(t.Zeros([]int{b.cfg.VocabSize}, mlxc.Float32), order, t.AsType(keep, mlxc.Float32), 0)
		ws = t.Where(t.Greater(kept, zero), ws, zero)
	}
	r := t.Multiply(t.Float(p.Draw), t.Sum(ws))
	past := t.Greater(t.CumSum(ws, 0, true), r)
	first := t.AsType(t.Argmax(t.AsType(past, mlxc.Int32)), mlxc.Int32)
	last := t.Max(t.Where(t.Greater(ws, zero), v.ids, t.Int(-1))) // rounding left r past the total
	return t.Where(t.Any(past), first, last)
}

// MaskChain says how a controller's mask reaches the device that
// opt's library and device choose, on this machine: whether MLX maps
// the memory's pages as its own buffer (zero-copy: Metal) or copies them
// (MLX's CPU and CUDA builds). It wraps a page-aligned page of host
// memory, as Pick wraps a linear memory's pages, and compares the
// array's data pointer with the page. With an mlx-c older than 0.5.0,
// which cannot wrap memory, the error says that tokens are sampled on
// the host.
func MaskChain(opt Options) (zeroCopy bool, err error) {
	lib, err := open(opt.Library)
	if err != nil {
		return false, err
	}
	words, _ := pageMask(1)
	err = lib.Do(func(t *mlxc.Thread) error {
		if !t.CanWrap() {
			return fmt.Errorf("mlx-c %s cannot wrap memory (mlx_array_new_data_managed is in 0.5.0 and later): tokens are sampled on the host", lib.Release.Name)
		}
		dev, err := device(t, opt.Device)
		if err != nil {
			return err
		}
		s := t.DefaultStream(dev)
		defer t.FreeStream(s)
		t.Use(s)
		zeroCopy = t.DataPointer(t.Wrap(words)) == uintptr(unsafe.Pointer(&words[0]))
		return nil
	})
	runtime.KeepAlive(words)
	return zeroCopy, err
}

// pageMask is a mask of n words at the start of whole host pages of
// the Go heap, and those pages: memory laid out as a linear memory's
// (for the self-check, doctor and the tests).
func pageMask(n int) (mask []uint32, pages []byte) {
	page := os.Getpagesize()
	size := (4*n + page - 1) / page * page
	buf := make([]byte, size+page)
	off := (page - int(uintptr(unsafe.Pointer(&buf[0])))%page) % page
	pages = buf[off : off+size : off+size]
	return unsafe.Slice((*uint32)(unsafe.Pointer(&pages[0])), n), pages
}
