package mlxbridge

import (
	"fmt"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/gguf"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/ggufaffine"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// weights is a Llama model's parameters on the device, named as in the
// checkpoint.
type weights struct {
	embedTokens matrix  // (vocab, hidden)
	layers      []layer // one per transformer block
	norm        *mlxc.Array
	lmHead      *matrix // &embedTokens when tied
	ropeFreqs   *mlxc.Array
}

// layer is one transformer block.
type layer struct {
	inputLayernorm, postAttentionLayernorm *mlxc.Array // (hidden) float32
	qProj, kProj, vProj, oProj             matrix
	gateProj, upProj, downProj             matrix
	// Qwen2's projection biases and Qwen3's per-head norms (float32),
	// nil where the architecture has none.
	qBias, kBias, vBias *mlxc.Array
	qNorm, kNorm        *mlxc.Array // (head_dim)
}

// matrix is a weight matrix of logical shape (out, in) in its stored form:
// dense in its dtype, or MLX affine-quantised (packed uint32 codes with
// float32 scales and biases per group).
type matrix struct {
	w              *mlxc.Array // (out, in) dense, or (out, in·bits/32) packed
	wT             *mlxc.Array // dense: the transposed view (in, out)
	scales, biases *mlxc.Array // quantised: (out, in/group)
	bits, group    int
	// plus, when set, is a second quantised matrix: the weights are the
	// sum of the two (a GGUF file's Q6_K blocks).
	plus *matrix
}

// mul is x·Wᵀ.
func (m *matrix) mul(t *mlxc.Thread, x *mlxc.Array) *mlxc.Array {
	if m.bits == 0 {
		return t.Matmul(x, m.wT)
	}
	y := t.QuantizedMatmul(x, m.w, m.scales, m.biases, m.group, m.bits)
	if m.plus != nil {
		y = t.Add(y, m.plus.mul(t, x))
	}
	return y
}

// rows gathers rows ids (an int32 array) as float32: the embedding lookup.
func (m *matrix) rows(t *mlxc.Thread, ids *mlxc.Array) *mlxc.Array {
	if m.bits == 0 {
		return t.AsType(t.Take(m.w, ids, 0), mlxc.Float32)
	}
	y := t.Dequantize(t.Take(m.w, ids, 0), t.Take(m.scales, ids, 0), t.Take(m.biases, ids, 0), m.group, m.bits)
	if m.plus != nil {
		y = t.Add(y, m.plus.rows(t, ids))
	}
	return y
}

// load copies every weight into MLX: dense matrices in their dtype,
// quantised ones packed with their scales and biases widened to float32
// (so that quantized_matmul computes in float32), norms as float32, and
// the RoPE wavelengths with llama3 scaling. A GGUF file's blocks become
// MLX affine quantisation, the same numbers (internal/ggufaffine), Q6_K's
// as the sum of two such matrices; a llama file's query and key rows are
// put back in Hugging Face's order.
func (b *Backend) load(t *mlxc.Thread, w *engine.Weights) error {
	l := loader{t: t, b: b}
	b.w.embedTokens = l.matrix(&w.EmbedTokens)
	b.w.lmHead = &b.w.embedTokens
	if w.LMHead.Name != w.EmbedTokens.Name {
		head := l.matrix(&w.LMHead)
		b.w.lmHead = &head
	}
	b.w.norm = l.vector(&w.Norm)
	b.w.layers = make([]layer, len(w.Layers))
	for i := range w.Layers {
		src, dst := &w.Layers[i], &b.w.layers[i]
		dst.inputLayernorm, dst.postAttentionLayernorm = l.vector(&src.InputLayernorm), l.vector(&src.PostAttentionLayernorm)
		// On one rank of several, its rows of the projections into the
		// heads and the feed-forward width, its columns of those out.
		dst.qProj, dst.kProj = l.share(l.qk(&src.QProj), true), l.share(l.qk(&src.KProj), true)
		dst.vProj, dst.oProj = l.share(l.matrix(&src.VProj), true), l.share(l.matrix(&src.OProj), false)
		dst.gateProj, dst.upProj = l.share(l.matrix(&src.GateProj), true), l.share(l.matrix(&src.UpProj), true)
		dst.downProj = l.share(l.matrix(&src.DownProj), false)
		if b.cfg.QKVBias() {
			dst.qBias, dst.kBias, dst.vBias = l.shareVector(l.vector(&src.QBias)), l.shareVector(l.vector(&src.KBias)), l.shareVector(l.vector(&src.VBias))
		}
		if b.cfg.QKNorm() {
			dst.qNorm, dst.kNorm = l.vector(&src.QNorm), l.vector(&src.KNorm)
		}
	}
	inv := b.cfg.InvFreq()
	wavelengths := make([]float32, len(inv))
	for i, f := range inv {
		wavelengths[i] = float32(1 / f)
	}
	b.w.ropeFreqs = l.keep(t.FromBytes(float32Bytes(wavelengths), []int{len(inv)}, mlxc.Float32))
	return l.err
}

// loader creates the backend's arrays, keeping each for Close.
type loader struct {
	t   *mlxc.Thread
	b   *Backend
	err error
}

func (l *loader) keep(a *mlxc.Array) *mlxc.Array {
	if a != nil {
		l.b.owned = append(l.b.owned, l.t.Keep(a))
	}
	return a
}

// array copies a tensor's bytes (mapped from its file) into MLX.
func (l *loader) array(t *engine.Tensor, shape []int) *mlxc.Array {
	dt, ok := mlxDtype(t.DType)
	if !ok {
		if l.err == nil {
			l.err = fmt.Errorf("%s: tensor %s: dtype %s not supported", t.File, t.Name, t.DType)
		}
		return nil
	}
	return l.t.FromBytes(t.Data, shape, dt)
}

func (l *loader) matrix(t *engine.Tensor) matrix {
	if l.err != nil {
		return matrix{}
	}
	if t.BlockQuantized() {
		return l.ggufMatrix(t, 0)
	}
	if !t.Quantized() {
		return l.dense(l.array(t, t.Shape))
	}
	rows, cols := t.Shape[0], t.Shape[1]
	return matrix{
		w:      l.keep(l.array(t, []int{rows, cols * t.Bits / 32})),
		scales: l.keep(l.t.AsType(l.array(t.Scales, t.Scales.Shape), mlxc.Float32)),
		biases: l.keep(l.t.AsType(l.array(t.Biases, t.Biases.Shape), mlxc.Float32)),
		bits:   t.Bits,
		group:  t.GroupSize,
	}
}

// qk is a query or key projection, its rows in Hugging Face's order.
func (l *loader) qk(t *engine.Tensor) matrix {
	if l.err != nil || !l.b.cfg.PermutedQK {
		return l.matrix(t)
	}
	hd := l.b.cfg.HeadDim
	if t.BlockQuantized() {
		return l.ggufMatrix(t, hd)
	}
	rows := t.Shape[0]
	n := len(t.Data) / rows
	data := make([]byte, 0, len(t.Data))
	for r := range rows {
		g := gguf.PermutedRow(r, hd)
		data = append(data, t.Data[g*n:(g+1)*n]...)
	}
	dt, _ := mlxDtype(t.DType) // a GGUF float: F32, F16 or BF16
	return l.dense(l.t.FromBytes(data, t.Shape, dt))
}

// dense keeps w and its transposed view.
func (l *loader) dense(w *mlxc.Array) matrix {
	if w == nil {
		return matrix{}
	}
	w = l.keep(w)
	return matrix{w: w, wT: l.keep(l.t.Transpose(w, 1, 0))}
}

// ggufMatrix copies a GGUF matrix of blocks into MLX as affine
// quantisation in groups of 32, exactly, its rows in llama.cpp's order
// undone when headDim is set. Q6_K (sixteen weights to a scale, and
// MLX's smallest group is 32) becomes two 6-bit matrices that add up to
// it: twice the products, the same 2 bytes a weight as f16, and no float
// weights to widen for each product (RATIONALE, "GGUF on MLX").
func (l *loader) ggufMatrix(t *engine.Tensor, headDim int) matrix {
	rows, cols := t.Shape[0], t.Shape[1]
	n := len(t.Data) / rows
	src := func(r int) []byte {
		if headDim > 0 {
			r = gguf.PermutedRow(r, headDim)
		}
		return t.Data[r*n : (r+1)*n]
	}
	var parts []*ggufaffine.Matrix
	var err error
	if ggufaffine.Bits(t.Blocks) != 0 {
		var a *ggufaffine.Matrix
		a, err = ggufaffine.Repack(t.Blocks, rows, cols, src)
		parts = append(parts, a)
	} else {
		var a, b *ggufaffine.Matrix
		a, b, err = ggufaffine.Split(t.Blocks, rows, cols, src)
		parts = append(parts, a, b)
	}
	if err != nil {
		l.err = fmt.Errorf("%s: tensor %s: %w", t.File, t.Name, err)
		return matrix{}
	}
	var m *matrix
	groups := []int{rows, cols / ggufaffine.Group}
	for i := len(parts) - 1; i >= 0; i-- {
		a := parts[i]
		m = &matrix{
			w:      l.keep(l.t.FromBytes(a.Codes, []int{rows, cols * a.Bits / 32}, mlxc.Uint32)),
			scales: l.keep(l.t.FromBytes(float32Bytes(a.Scales), groups, mlxc.Float32)),
			biases: l.keep(l.t.FromBytes(float32Bytes(a.Biases), groups, mlxc.Float32)),
			bits:   a.Bits,
			group:  ggufaffine.Group,
			plus:   m,
		}
	}
	return *m
}

func (l *loader) vector(t *engine.Tensor) *mlxc.Array {
	if t.Quantized() && l.err == nil {
		l.err = fmt.Errorf("%s: tensor %s: a quantised norm weight is not supported", t.File, t.Name)
	}
	if l.err != nil {
		return nil
	}
	return l.keep(l.t.AsType(l.array(t, t.Shape), mlxc.Float32))
}

// mlxDtype maps a stored dtype to MLX's.
func mlxDtype(d safetensors.DType) (mlxc.Dtype, bool) {
	switch d {
	case safetensors.F32:
		return mlxc.Float32, true
	case safetensors.F16:
		return mlxc.Float16, true
	case safetensors.BF16:
		return mlxc.BFloat16, true
	case safetensors.U32:
		return mlxc.Uint32, true
	}
	return 0, false
}
