package cpu

import (
	"math"

	"github.com/driftwoodlabs/driftwood/engine"
)

// state is the forward pass's scratch, allocated once (llama2.c's RunState).
type state struct {
	maxBatch int
	x        []float32 // (batch, hidden) residual stream
	xb, xb2  []float32 // (batch, hidden) normed input, projection output
	q        []float32 // (batch, heads*head_dim)
	k, v     []float32 // (batch, kv_heads*head_dim)
	att      []float32 // (batch, heads*head_dim) attention output
	hb, hb2  []float32 // (batch, intermediate)
	cos, sin []float32 // (batch, head_dim/2)
	perm     []float32 // (head_dim) one head reordered (Config.PermutedQK)
	ins      [3]input  // a matmul's input, one per distinct layout
	inBufs   [3]inputBuf
	scr      []*scratch // per worker
	attnPer  int        // query heads per attention item (attnPer)
}

func newState(c *engine.Config, batch, workers int) state {
	q, kv := c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim
	widest := max(c.HiddenSize, c.IntermediateSize, q)
	st := state{
		maxBatch: batch,
		x:        make([]float32, batch*c.HiddenSize),
		xb:       make([]float32, batch*c.HiddenSize),
		xb2:      make([]float32, batch*c.HiddenSize),
		q:        make([]float32, batch*q),
		k:        make([]float32, batch*kv),
		v:        make([]float32, batch*kv),
		att:      make([]float32, batch*q),
		hb:       make([]float32, batch*c.IntermediateSize),
		hb2:      make([]float32, batch*c.IntermediateSize),
		cos:      make([]float32, batch*c.HeadDim/2),
		sin:      make([]float32, batch*c.HeadDim/2),
		perm:     make([]float32, c.HeadDim),
		scr:      make([]*scratch, workers),
		attnPer:  attnPer(c.NumAttentionHeads/c.NumKeyValueHeads, c.NumKeyValueHeads, workers),
	}
	for i := range st.inBufs {
		st.inBufs[i] = newInputBuf(widest, batch)
	}
	for i := range st.scr {
		st.scr[i] = newScratch(widest, batch)
		st.scr[i].q = make([]float32, st.attnPer*c.HeadDim)
		st.scr[i].inv = make([]float32, st.attnPer)
	}
	return st
}

// part is one matrix of a matmul job and where its output goes.
type part struct {
	m   matrix
	out []float32
}

// matmulJob computes out = x·Wᵀ for up to three matrices that share an
// input (q, k and v; gate and up), split by rows over their concatenation.
type matmulJob struct {
	parts [3]part
	ins   [3]*input
	np    int
	scr   []*scratch
}

func (j *matmulJob) run(lo, hi, worker int) {
	s := j.scr[worker]
	for i, p := range j.parts[:j.np] {
		rows, _ := p.m.dims()
		if a, b := max(lo, 0), min(hi, rows); a < b {
			if in := j.ins[i]; in.n == 1 {
				p.m.gemv(p.out, in, a, b, s)
			} else {
				gemm(p.m, p.out, in, a, b, s)
			}
		}
		lo, hi = lo-rows, hi-rows
	}
}

// matmul sets each part's out = x·Wᵀ for n inputs x of cols floats.
func (b *Backend) matmul(x []float32, n int, parts ...part) {
	st := &b.st
	b.mm = matmulJob{np: len(parts), scr: st.scr}
	total := 0
	for i, p := range parts {
		rows, cols := p.m.dims()
		total += rows
		b.mm.parts[i] = p
		lay := p.m.layout()
		k := 0
		for k < i && parts[k].m.layout() != lay {
			k++
		}
		if k == i {
			st.ins[i].prepare(&st.inBufs[i], x, n, cols, lay)
		}
		b.mm.ins[i] = &st.ins[k]
	}
	// Pieces of 16 rows: whole cache lines of output, so that workers
	// never write the same line, and whole blocks for gemm.
	b.pool.parallel(&b.mm, total, 16)
}

// attnJob is causal grouped-query attention for a batch, split over
// (token, head) pairs.
type attnJob struct {
	c      *cache
	layer  int
	p0     int // position of the batch's first token
	heads  int
	group  int // query heads per kv head
	per    int // query heads of a group per item: group, or a divisor of it
	hd     int
	q, out []float32
	scr    []*scratch
}

// items is how many pieces of work n tokens' attention is: for each token
// and kv head, its query heads, per at a time.
func (j *attnJob) items(n int) int { return n * j.heads / j.per }

// run computes the items [lo, hi). An item is per query heads that share
// a kv head: each block of that head's keys and values is read once for
// all of them, while it is in cache, rather than once per query head (a
// group of 4 on Llama 3.2 1B read 4× the KV bytes at every decode step:
// deep in a chat the largest read after the weights).
func (j *attnJob) run(lo, hi, worker int) {
	s := j.scr[worker]
	qDim := j.heads * j.hd
	scale := float32(1 / math.Sqrt(float64(j.hd)))
	keys, vals, typ := &j.c.k[j.layer], &j.c.v[j.layer], j.c.typ
	items := j.heads / j.per // per token
	for i := lo; i < hi; i++ {
		b, h0 := i/items, i%items*j.per
		n := j.p0 + b + 1 // positions this token sees
		g := h0 / j.group
		q := s.q[:j.per*j.hd]
		for d, v := range j.q[b*qDim+h0*j.hd:][:j.per*j.hd] {
			q[d] = v * scale
		}
		stride := len(s.scores) / j.per
		four := j.per%4 == 0 && has4(typ, j.hd)
		j.c.each(g, n, func(p, blk, off, m int) {
			if four {
				for h := 0; h < j.per; h += 4 {
					keys.dot4(typ, s.scores[h*stride+p:], stride, blk, off, m, q[h*j.hd:(h+4)*j.hd])
				}
				return
			}
			for h := range j.per {
				keys.dot(typ, s.scores[h*stride+p:h*stride+p+m], blk, off, q[h*j.hd:(h+1)*j.hd])
			}
		})
		out := j.out[b*qDim+h0*j.hd:][:j.per*j.hd]
		clear(out)
		inv := s.inv[:j.per]
		for h := range inv {
			inv[h] = expWeights(s.scores[h*stride : h*stride+n])
		}
		j.c.each(g, n, func(p, blk, off, m int) {
			if four {
				for h := 0; h < j.per; h += 4 {
					vals.axpy4(typ, out[h*j.hd:(h+4)*j.hd], blk, off, m, s.scores[h*stride+p:], stride)
				}
				return
			}
			for h := range j.per {
				vals.axpy(typ, out[h*j.hd:(h+1)*j.hd], blk, off, s.scores[h*stride+p:h*stride+p+m])
			}
		})
		for h, f := range inv {
			for d := range out[h*j.hd : (h+1)*j.hd] {
				out[h*j.hd+d] *= f
			}
		}
	}
}

// attnPer is how many query heads of a group of group an attention item
// takes: the whole group, unless that leaves fewer than two items per
// worker for a token (few kv heads, as SmolLM2's 3 or a single one);
// then the largest divisor of group that gives them.
func attnPer(group, kvHeads, workers int) int {
	per := group
	for per > 1 && kvHeads*group/per < 2*workers {
		per--
		for group%per != 0 {
			per--
		}
	}
	return per
}

// forward runs one batch (at most maxBatch tokens) through the model and
// writes the logits of every token (len(out) = n·vocab), of the last token
// (len(out) = vocab), or none (out nil).
func (b *Backend) forward(c *cache, tokens []int32, out []float32) {
	cfg, st := b.cfg, &b.st
	n, p0 := len(tokens), c.n
	hidden := cfg.HiddenSize
	eps := float32(cfg.RMSNormEps)

	c.reserve(p0 + n)
	for _, s := range st.scr {
		if len(s.scores) < st.attnPer*c.capacity() {
			s.scores = make([]float32, st.attnPer*c.capacity())
		}
	}
	// x = embed(tokens)
	for i, t := range tokens {
		b.embed.row(st.x[i*hidden:(i+1)*hidden], int(t))
	}
	b.rope.angles(st.cos, st.sin, p0, n)
	// Each block, as mlx-lm's: h = x + attention(norm(x)); x = h + mlp(norm(h)).
	for l := range b.layers {
		L := &b.layers[l]
		b.norm(st.xb, st.x, L.attnNorm, n)
		b.attention(c, l, L, n, p0)  // st.xb → st.xb2
		add(st.x[:n*hidden], st.xb2) // residual
		b.norm(st.xb, st.x, L.mlpNorm, n)
		b.mlp(L, n)                  // st.xb → st.xb2
		add(st.x[:n*hidden], st.xb2) // residual
	}
	c.n = p0 + n
	if out == nil {
		return
	}
	// logits = lm_head(norm(x)), of the last token only when out holds one
	// row.
	first := 0
	if len(out) == cfg.VocabSize {
		first = n - 1
	}
	for i := first; i < n; i++ {
		rmsnorm(st.xb[(i-first)*hidden:(i-first+1)*hidden], st.x[i*hidden:(i+1)*hidden], b.finalNorm, eps)
	}
	b.matmul(st.xb, n-first, part{b.lmHead, out})
}

// norm sets dst = rmsnorm(x)·w for each of n rows of hidden floats.
func (b *Backend) norm(dst, x, w []float32, n int) {
	hidden, eps := b.cfg.HiddenSize, float32(b.cfg.RMSNormEps)
	for i := 0; i < n; i++ {
		rmsnorm(dst[i*hidden:(i+1)*hidden], x[i*hidden:(i+1)*hidden], w, eps)
	}
}

// attention is a block's self-attention of n tokens from position p0 over
// its input in st.xb, written to st.xb2: qkv projections, RoPE, the new
// keys and values into the cache, grouped-query attention over every
// cached position, the output projection.
func (b *Backend) attention(c *cache, l int, L *layer, n, p0 int) {
	cfg, st := b.cfg, &b.st
	hd := cfg.HeadDim
	qDim, kvDim, half := cfg.NumAttentionHeads*hd, cfg.NumKeyValueHeads*hd, hd/2
	eps := float32(cfg.RMSNormEps)
	// qkv
	b.matmul(st.xb, n, part{L.q, st.q}, part{L.k, st.k}, part{L.v, st.v})
	for i := 0; i < n; i++ {
		q, k := st.q[i*qDim:(i+1)*qDim], st.k[i*kvDim:(i+1)*kvDim]
		if cfg.PermutedQK { // GGUF llama: heads back in Hugging Face's order
			unpermuteHeads(q, hd, st.perm)
			unpermuteHeads(k, hd, st.perm)
		}
		if L.qb != nil { // Qwen2: biased projections
			add(q, L.qb)
			add(k, L.kb)
			add(st.v[i*kvDim:(i+1)*kvDim], L.vb)
		}
		if L.qNorm != nil { // Qwen3: each head RMS-normed before RoPE
			headNorm(q, L.qNorm, eps)
			headNorm(k, L.kNorm, eps)
		}
		// RoPE
		cos, sin := st.cos[i*half:(i+1)*half], st.sin[i*half:(i+1)*half]
		rope(q, hd, cos, sin)
		rope(k, hd, cos, sin)
	}
	// the cache
	c.store(l, p0, n, st.k, st.v)
	// softmax(q·kᵀ/√d)·v per head
	b.att = attnJob{c: c, layer: l, p0: p0, heads: cfg.NumAttentionHeads,
		group: cfg.NumAttentionHeads / cfg.NumKeyValueHeads, per: st.attnPer, hd: hd,
		q: st.q, out: st.att, scr: st.scr}
	b.pool.parallel(&b.att, b.att.items(n), 1)
	// output projection
	b.matmul(st.att, n, part{L.o, st.xb2})
}

// mlp is a block's SwiGLU feed-forward of n rows of st.xb into st.xb2:
// down(silu(gate(x))·up(x)).
func (b *Backend) mlp(L *layer, n int) {
	st := &b.st
	b.matmul(st.xb, n, part{L.gate, st.hb}, part{L.up, st.hb2})
	swiglu(st.hb[:n*b.cfg.IntermediateSize], st.hb2)
	b.matmul(st.hb, n, part{L.down, st.xb2})
}
