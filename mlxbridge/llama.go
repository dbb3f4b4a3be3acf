package mlxbridge

import (
	"math"
	"unsafe"

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
	for i := range b.w.layers {
		l := &b.w.layers[i]
		x = t.Add(x, b.attention(t, l, c, i, n, t.RMSNorm(x, l.inputLayernorm, eps)))
		x = t.Add(x, b.mlp(t, l, t.RMSNorm(x, l.postAttentionLayernorm, eps)))
	}
	outputs := append(append([]*mlxc.Array(nil), c.kv.k...), c.kv.v...)
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
// (1, n, hidden), with rotary positions from c.n and the layer's cache.
func (b *Backend) attention(t *mlxc.Thread, l *layer, c *cache, layer, n int, h *mlxc.Array) *mlxc.Array {
	cfg := b.cfg
	hd := cfg.HeadDim
	// qkv, with Qwen2's biases
	q := heads(t, withBias(t, l.qProj.mul(t, h), l.qBias), n, cfg.NumAttentionHeads, hd)
	k := heads(t, withBias(t, l.kProj.mul(t, h), l.kBias), n, cfg.NumKeyValueHeads, hd)
	v := heads(t, withBias(t, l.vProj.mul(t, h), l.vBias), n, cfg.NumKeyValueHeads, hd)
	if l.qNorm != nil {
		// Qwen3: RMSNorm of each query and key head before RoPE
		eps := float32(cfg.RMSNormEps)
		q, k = t.RMSNorm(q, l.qNorm, eps), t.RMSNorm(k, l.kNorm, eps)
	}
	// RoPE
	q = t.RoPE(q, hd, c.n, b.w.ropeFreqs)
	k = t.RoPE(k, hd, c.n, b.w.ropeFreqs)
	keys, values := c.append(t, layer, n, k, v)
	o := t.Attention(q, keys, values, float32(1/math.Sqrt(float64(hd))), n > 1)
	o = t.Reshape(t.Transpose(o, 0, 2, 1, 3), 1, n, cfg.NumAttentionHeads*hd)
	return l.oProj.mul(t, o)
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
	return l.downProj.mul(t, t.Multiply(t.Multiply(g, t.Sigmoid(g)), l.upProj.mul(t, h)))
}
