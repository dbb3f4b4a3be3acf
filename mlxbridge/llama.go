package mlxbridge

import (
	"math"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// logitsMode says which logits a forward pass computes.
type logitsMode int

const (
	logitsNone logitsMode = iota // a prompt chunk before the last
	logitsLast                   // the last token's
	logitsAll                    // every token's
)

// forward runs tokens through the model at positions c.n, c.n+1, ...,
// appends their keys and values to c and evaluates; it returns the
// logits asked for, shaped (1, n or 1, vocab), or nil.
func (b *Backend) forward(t *mlxc.Thread, c *cache, tokens []int32, out logitsMode) *mlxc.Array {
	cfg := b.cfg
	n := len(tokens)
	eps := float32(cfg.RMSNormEps)
	c.reserve(t, c.n+n)
	ids := t.FromBytes(unsafe.Slice((*byte)(unsafe.Pointer(&tokens[0])), 4*n), []int{n}, mlxc.Int32)
	x := t.Reshape(b.w.embedTokens.rows(t, ids), 1, n, cfg.HiddenSize)
	var mask *mlxc.Array // q8_0's causal mask, shared by the layers
	if b.kvType == engine.KVQ8 && n > 1 {
		mask = t.FromBytes(float32Bytes(causalMask(n, c.n+n)), []int{n, c.n + n}, mlxc.Float32)
	}
	for i := range b.w.layers {
		l := &b.w.layers[i]
		x = t.Add(x, b.attention(t, l, c, i, n, t.RMSNorm(x, l.inputLayernorm, eps), mask))
		x = t.Add(x, b.mlp(t, l, t.RMSNorm(x, l.postAttentionLayernorm, eps)))
	}
	outputs := c.kv.all()
	if b.sharded() {
		// The last layer's two all_sums feed no cache: evaluated here
		// too, every rank meets the others in each of them.
		outputs = append(outputs, x)
	}
	var logits *mlxc.Array
	if out != logitsNone {
		if out == logitsLast && n > 1 {
			x = t.Slice(x, []int{0, n - 1, 0}, []int{1, n, cfg.HiddenSize})
		}
		logits = b.w.lmHead.mul(t, t.RMSNorm(x, b.w.norm, eps))
		outputs = append(outputs, logits)
	}
	t.Eval(outputs...)
	if t.Err() == nil {
		c.n += n
	}
	return logits
}

// attention is grouped-query self-attention of the normed input h, shaped
// (1, n, hidden), with rotary positions from c.n and the layer's cache;
// mask is q8_0's causal mask for n > 1 (causalMask).
func (b *Backend) attention(t *mlxc.Thread, l *layer, c *cache, layer, n int, h, mask *mlxc.Array) *mlxc.Array {
	cfg := b.cfg
	hd := cfg.HeadDim
	// qkv, with Qwen2's biases
	q := heads(t, withBias(t, l.qProj.mul(t, h), l.qBias), n, b.heads, hd)
	k := heads(t, withBias(t, l.kProj.mul(t, h), l.kBias), n, b.kvHeads, hd)
	v := heads(t, withBias(t, l.vProj.mul(t, h), l.vBias), n, b.kvHeads, hd)
	if l.qNorm != nil {
		// Qwen3: RMSNorm of each query and key head before RoPE
		eps := float32(cfg.RMSNormEps)
		q, k = t.RMSNorm(q, l.qNorm, eps), t.RMSNorm(k, l.kNorm, eps)
	}
	// RoPE
	q = t.RoPE(q, hd, c.n, b.w.ropeFreqs)
	k = t.RoPE(k, hd, c.n, b.w.ropeFreqs)
	parts := c.append(t, layer, n, k, v)
	scale := float32(1 / math.Sqrt(float64(hd)))
	var o *mlxc.Array
	if b.kvType == engine.KVQ8 {
		o = b.quantizedAttention(t, q, parts, scale, n, c.n+n, mask)
	} else if dt := b.layout[partK].dtype; dt != mlxc.Float32 {
		// the fused kernel reads the cache in its own type
		o = t.AsType(t.Attention(t.AsType(q, dt), parts[partK], parts[partV], scale, n > 1), mlxc.Float32)
	} else {
		o = t.Attention(q, parts[partK], parts[partV], scale, n > 1)
	}
	o = t.Reshape(t.Transpose(o, 0, 2, 1, 3), 1, n, b.heads*hd)
	return b.reduce(t, l.oProj.mul(t, o))
}

// quantizedAttention is attention over a q8_0 cache's parts (positions
// 0..s), computed from the codes as mlx-lm's
// quantized_scaled_dot_product_attention does: the scores are q·kᵀ by
// quantized_matmul, grouped by kv head, plus mask (n > 1 queries, the
// last n positions; nil for one), a float32 softmax, and its product with
// the values by quantized_matmul. q is (1, heads, n, head_dim) float32;
// so is the result.
func (b *Backend) quantizedAttention(t *mlxc.Thread, q *mlxc.Array, parts []*mlxc.Array, scale float32, n, s int, mask *mlxc.Array) *mlxc.Array {
	cfg := b.cfg
	kvh, hd := b.kvHeads, cfg.HeadDim
	rep := b.heads / kvh
	q = t.Reshape(t.Multiply(q, t.FromBytes(float32Bytes([]float32{scale}), []int{1}, mlxc.Float32)), 1, kvh, rep, n, hd)
	group := func(p int) *mlxc.Array { // (1, kv_heads, 1, s, width): one kv head for rep query heads
		return t.Reshape(parts[p], 1, kvh, 1, s, b.layout[p].width)
	}
	scores := t.QuantizedMatmul(q, group(partK), group(partKScales), group(partKBiases), q8Group, q8Bits)
	if mask != nil {
		scores = t.Add(scores, mask)
	}
	o := t.QuantizedMatmulN(t.Softmax(scores, -1, true), group(partV), group(partVScales), group(partVBiases), q8Group, q8Bits)
	return t.Reshape(o, 1, b.heads, n, hd)
}

// causalMask is the additive mask of n queries at the last n of s
// positions: −Inf where a key comes after its query.
func causalMask(n, s int) []float32 {
	m := make([]float32, n*s)
	inf := float32(math.Inf(-1))
	for i := range n {
		for j := s - n + i + 1; j < s; j++ {
			m[i*s+j] = inf
		}
	}
	return m
}

// withBias is x + bias, or x when there is no bias.
func withBias(t *mlxc.Thread, x, bias *mlxc.Array) *mlxc.Array {
	if bias == nil {
		return x
	}
	return t.Add(x, bias)
}

// heads splits (1, n, heads·hd) into (1, heads, n, hd).
func heads(t *mlxc.Thread, x *mlxc.Array, n, heads, hd int) *mlxc.Array {
	return t.Transpose(t.Reshape(x, 1, n, heads, hd), 0, 2, 1, 3)
}

// mlp is the SwiGLU feed-forward block: down(silu(gate(h)) · up(h)).
func (b *Backend) mlp(t *mlxc.Thread, l *layer, h *mlxc.Array) *mlxc.Array {
	g := l.gateProj.mul(t, h)
	return b.reduce(t, l.downProj.mul(t, t.Multiply(t.Multiply(g, t.Sigmoid(g)), l.upProj.mul(t, h))))
}
