package cpu

import (
	"math"

	"github.com/driftwoodlabs/driftwood/engine"
)

// state is the forward pass's scratch, allocated once (llama2.c's RunState).
type state struct {
	maxBatch int
	x        []float32   // (batch, hidden) residual stream
	xb, xb2  []float32   // (batch, hidden) normed input, projection output
	q        []float32   // (batch, heads*head_dim)
	k, v     []float32   // (batch, kv_heads*head_dim)
	att      []float32   // (batch, heads*head_dim) attention output
	hb, hb2  []float32   // (batch, intermediate)
	cos, sin []float32   // (batch, head_dim/2)
	rowBuf   [][]float32 // per worker: one dequantised weight row
	scores   [][]float32 // per worker: attention scores over the window
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
		rowBuf:   make([][]float32, workers),
		scores:   make([][]float32, workers),
	}
	for i := range st.rowBuf {
		st.rowBuf[i] = make([]float32, widest)
	}
	return st
}

// matmulJob computes out = x·Wᵀ for a batch of n inputs, split by rows.
type matmulJob struct {
	out, x []float32
	n      int
	m      matrix
	rowBuf [][]float32
}

func (j *matmulJob) run(lo, hi, worker int) {
	j.m.mul(j.out, j.x, j.n, lo, hi, j.rowBuf[worker])
}

func (b *Backend) matmul(out, x []float32, n int, m matrix) {
	rows, _ := m.dims()
	b.mm = matmulJob{out: out, x: x, n: n, m: m, rowBuf: b.st.rowBuf}
	b.pool.parallel(&b.mm, rows, 16)
}

// attnJob is causal grouped-query attention for a batch, split over
// (token, head) pairs.
type attnJob struct {
	c      *cache
	layer  int
	p0     int // position of the batch's first token
	heads  int
	group  int // query heads per kv head
	hd     int
	q, out []float32
	scores [][]float32
}

func (j *attnJob) run(lo, hi, worker int) {
	kvDim := j.c.kvDim()
	qDim := j.heads * j.hd
	keys, vals := j.c.k[j.layer], j.c.v[j.layer]
	scale := float32(1 / math.Sqrt(float64(j.hd)))
	for i := lo; i < hi; i++ {
		b, h := i/j.heads, i%j.heads
		kvOff := (h / j.group) * j.hd
		q := j.q[b*qDim+h*j.hd:][:j.hd]
		n := j.p0 + b + 1 // positions this token sees
		s := j.scores[worker][:n]
		for t := range s {
			s[t] = dot(q, keys[t*kvDim+kvOff:]) * scale
		}
		softmax(s)
		out := j.out[b*qDim+h*j.hd:][:j.hd]
		clear(out)
		for t, w := range s {
			axpy(out, w, vals[t*kvDim+kvOff:])
		}
	}
}

// forward runs one batch (at most maxBatch tokens) through the model and
// writes the logits of every token (len(out) = n·vocab), of the last token
// (len(out) = vocab), or none (out nil).
func (b *Backend) forward(c *cache, tokens []int32, out []float32) {
	cfg, st := b.cfg, &b.st
	n, p0 := len(tokens), c.n
	hidden, hd := cfg.HiddenSize, cfg.HeadDim
	qDim, kvDim := cfg.NumAttentionHeads*hd, cfg.NumKeyValueHeads*hd
	inter := cfg.IntermediateSize
	eps := float32(cfg.RMSNormEps)

	c.reserve(p0 + n)
	for w := range st.scores {
		if len(st.scores[w]) < p0+n {
			st.scores[w] = make([]float32, len(c.k[0])/kvDim)
		}
	}
	for i, t := range tokens {
		b.embed.row(st.x[i*hidden:(i+1)*hidden], int(t))
	}
	b.rope.angles(st.cos, st.sin, p0, n)
	half := hd / 2
	for l := range b.layers {
		L := &b.layers[l]
		for i := 0; i < n; i++ {
			rmsnorm(st.xb[i*hidden:(i+1)*hidden], st.x[i*hidden:(i+1)*hidden], L.attnNorm, eps)
		}
		b.matmul(st.q, st.xb, n, L.q)
		b.matmul(st.k, st.xb, n, L.k)
		b.matmul(st.v, st.xb, n, L.v)
		for i := 0; i < n; i++ {
			cos, sin := st.cos[i*half:(i+1)*half], st.sin[i*half:(i+1)*half]
			rope(st.q[i*qDim:(i+1)*qDim], hd, cos, sin)
			rope(st.k[i*kvDim:(i+1)*kvDim], hd, cos, sin)
		}
		copy(c.k[l][p0*kvDim:], st.k[:n*kvDim])
		copy(c.v[l][p0*kvDim:], st.v[:n*kvDim])
		b.att = attnJob{c: c, layer: l, p0: p0, heads: cfg.NumAttentionHeads,
			group: cfg.NumAttentionHeads / cfg.NumKeyValueHeads, hd: hd,
			q: st.q, out: st.att, scores: st.scores}
		b.pool.parallel(&b.att, n*cfg.NumAttentionHeads, 1)
		b.matmul(st.xb2, st.att, n, L.o)
		add(st.x[:n*hidden], st.xb2)
		for i := 0; i < n; i++ {
			rmsnorm(st.xb[i*hidden:(i+1)*hidden], st.x[i*hidden:(i+1)*hidden], L.mlpNorm, eps)
		}
		b.matmul(st.hb, st.xb, n, L.gate)
		b.matmul(st.hb2, st.xb, n, L.up)
		swiglu(st.hb[:n*inter], st.hb2)
		b.matmul(st.xb2, st.hb, n, L.down)
		add(st.x[:n*hidden], st.xb2)
	}
	c.n = p0 + n
	if out == nil {
		return
	}
	first := 0
	if len(out) == cfg.VocabSize {
		first = n - 1
	}
	for i := first; i < n; i++ {
		rmsnorm(st.xb[(i-first)*hidden:(i-first+1)*hidden], st.x[i*hidden:(i+1)*hidden], b.norm, eps)
	}
	b.matmul(out, st.xb, n-first, b.lmHead)
}
