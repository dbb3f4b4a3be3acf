package mlxc

// The operations, each a checked call on the current stream (Thread.Use)
// returning a temporary array; see mlx/c/ops.h and mlx/c/fast.h.

// Zeros is an array of zeros.
func (t *Thread) Zeros(shape []int, dtype Dtype) *Array {
	dims := int32s(shape)
	return t.op("mlx_zeros", func(res *cArray) int32 {
		return t.lib.api.zeros(res, &dims[0], uintptr(len(shape)), dtype, t.s())
	})
}

// AsType converts a to dtype.
func (t *Thread) AsType(a *Array, dtype Dtype) *Array {
	return t.op("mlx_astype", func(res *cArray) int32 { return t.lib.api.astype(res, a.c(), dtype, t.s()) })
}

// Add is a + b, broadcasting.
func (t *Thread) Add(a, b *Array) *Array {
	return t.op("mlx_add", func(res *cArray) int32 { return t.lib.api.add(res, a.c(), b.c(), t.s()) })
}

// Multiply is a · b elementwise, broadcasting.
func (t *Thread) Multiply(a, b *Array) *Array {
	return t.op("mlx_multiply", func(res *cArray) int32 { return t.lib.api.multiply(res, a.c(), b.c(), t.s()) })
}

// Sigmoid is 1 / (1 + exp(-a)).
func (t *Thread) Sigmoid(a *Array) *Array {
	return t.op("mlx_sigmoid", func(res *cArray) int32 { return t.lib.api.sigmoid(res, a.c(), t.s()) })
}

// Matmul is the matrix product a·b over the last two axes.
func (t *Thread) Matmul(a, b *Array) *Array {
	return t.op("mlx_matmul", func(res *cArray) int32 { return t.lib.api.matmul(res, a.c(), b.c(), t.s()) })
}

// Reshape gives a a new shape of the same size.
func (t *Thread) Reshape(a *Array, shape ...int) *Array {
	dims := int32s(shape)
	return t.op("mlx_reshape", func(res *cArray) int32 {
		return t.lib.api.reshape(res, a.c(), &dims[0], uintptr(len(shape)), t.s())
	})
}

// Transpose permutes a's axes (a view where possible).
func (t *Thread) Transpose(a *Array, axes ...int) *Array {
	ax := int32s(axes)
	return t.op("mlx_transpose_axes", func(res *cArray) int32 {
		return t.lib.api.transposeAxes(res, a.c(), &ax[0], uintptr(len(axes)), t.s())
	})
}

// Slice is a[start:stop] on every axis, with unit strides.
func (t *Thread) Slice(a *Array, start, stop []int) *Array {
	lo, hi, st := int32s(start), int32s(stop), ones(len(start))
	n := uintptr(len(start))
	return t.op("mlx_slice", func(res *cArray) int32 {
		return t.lib.api.slice(res, a.c(), &lo[0], n, &hi[0], n, &st[0], n, t.s())
	})
}

// SliceUpdate is src with src[start:stop] replaced by update. When src
// is not otherwise referenced, MLX updates its buffer in place.
func (t *Thread) SliceUpdate(src, update *Array, start, stop []int) *Array {
	lo, hi, st := int32s(start), int32s(stop), ones(len(start))
	n := uintptr(len(start))
	return t.op("mlx_slice_update", func(res *cArray) int32 {
		return t.lib.api.sliceUpdate(res, src.c(), update.c(), &lo[0], n, &hi[0], n, &st[0], n, t.s())
	})
}

func ones(n int) []int32 {
	v := make([]int32, max(n, 1))
	for i := range v {
		v[i] = 1
	}
	return v
}

// Take gathers the entries of a at indices along axis.
func (t *Thread) Take(a, indices *Array, axis int) *Array {
	return t.op("mlx_take_axis", func(res *cArray) int32 {
		return t.lib.api.takeAxis(res, a.c(), indices.c(), int32(axis), t.s())
	})
}

// Contiguous is a in row-major order (a itself when it already is).
func (t *Thread) Contiguous(a *Array) *Array {
	return t.op("mlx_contiguous", func(res *cArray) int32 { return t.lib.api.contiguous(res, a.c(), false, t.s()) })
}

// QuantizedMatmul is x·dequantize(w)ᵀ for MLX affine-quantised w with
// its scales and biases, without dequantising w in memory.
func (t *Thread) QuantizedMatmul(x, w, scales, biases *Array, groupSize, bits int) *Array {
	return t.quantizedMatmul(x, w, scales, biases, true, groupSize, bits)
}

// QuantizedMatmulN is x·dequantize(w), not transposed: w's rows are the
// inner dimension, quantised along its columns.
func (t *Thread) QuantizedMatmulN(x, w, scales, biases *Array, groupSize, bits int) *Array {
	return t.quantizedMatmul(x, w, scales, biases, false, groupSize, bits)
}

func (t *Thread) quantizedMatmul(x, w, scales, biases *Array, transpose bool, groupSize, bits int) *Array {
	return t.op("mlx_quantized_matmul", func(res *cArray) int32 {
		return t.lib.api.quantizedMatmul(res, x.c(), w.c(), scales.c(), biases.c(), transpose,
			optionalInt{int32(groupSize), true}, optionalInt{int32(bits), true}, "affine", t.s())
	})
}

// Quantize is MLX's affine quantisation of w along its last axis, in
// groups of groupSize: the codes packed into uint32 words, and the scales
// and biases, of w's dtype.
func (t *Thread) Quantize(w *Array, groupSize, bits int) (codes, scales, biases *Array) {
	t.live()
	out := [3]*Array{{}, {}, {}}
	t.temps = append(t.temps, out[:]...)
	if t.err == nil {
		a := t.lib.api
		v := a.vectorArrayNew()
		defer a.vectorArrayFree(v)
		if t.check("mlx_quantize", a.quantize(&v, w.c(), optionalInt{int32(groupSize), true}, optionalInt{int32(bits), true}, "affine", cArray{}, t.s())) {
			for i, x := range out {
				if !t.check("mlx_vector_array_get", a.vectorArrayGet(&x.h, v, uintptr(i))) {
					break
				}
			}
		}
	}
	return out[0], out[1], out[2]
}

// Softmax is the softmax of a along axis; precise computes it in float32
// whatever a's dtype.
func (t *Thread) Softmax(a *Array, axis int, precise bool) *Array {
	return t.op("mlx_softmax_axis", func(res *cArray) int32 {
		return t.lib.api.softmaxAxis(res, a.c(), int32(axis), precise, t.s())
	})
}

// Dequantize expands MLX affine-quantised w to the dtype of its scales.
func (t *Thread) Dequantize(w, scales, biases *Array, groupSize, bits int) *Array {
	return t.op("mlx_dequantize", func(res *cArray) int32 {
		return t.lib.api.dequantize(res, w.c(), scales.c(), biases.c(),
			optionalInt{int32(groupSize), true}, optionalInt{int32(bits), true}, "affine", cArray{}, optionalDtype{}, t.s())
	})
}

// RMSNorm is x / sqrt(mean(x²) + eps) · weight over the last axis.
func (t *Thread) RMSNorm(x, weight *Array, eps float32) *Array {
	return t.op("mlx_fast_rms_norm", func(res *cArray) int32 { return t.lib.api.rmsNorm(res, x.c(), weight.c(), eps, t.s()) })
}

// RoPE rotates the first dims features of x, shaped (batch, heads, seq,
// head_dim), by position offset+i with the rotate-half (non-traditional)
// layout; freqs holds dims/2 wavelengths, the reciprocals of the inverse
// frequencies (so llama3 scaling is applied by the caller).
func (t *Thread) RoPE(x *Array, dims, offset int, freqs *Array) *Array {
	return t.op("mlx_fast_rope", func(res *cArray) int32 {
		return t.lib.api.rope(res, x.c(), int32(dims), false, optionalFloat{}, 1, int32(offset), freqs.c(), t.s())
	})
}

// Attention is softmax(q·kᵀ·scale)·v with q shaped (batch, heads, L, d) and
// k, v (batch, kv_heads, S, d), kv_heads dividing heads; causal masks each
// query from the keys after its position (the queries being the last L of
// the S positions).
func (t *Thread) Attention(q, k, v *Array, scale float32, causal bool) *Array {
	mode := ""
	if causal {
		mode = "causal"
	}
	return t.op("mlx_fast_scaled_dot_product_attention", func(res *cArray) int32 {
		return t.lib.api.sdpa(res, q.c(), k.c(), v.c(), scale, mode, cArray{}, cArray{}, t.s())
	})
}
