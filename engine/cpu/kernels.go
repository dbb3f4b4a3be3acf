package cpu

import "math"

// Kernels are free functions over slices, output first, as in llama2.c.

// rmsnorm sets out = x / sqrt(mean(x²) + eps) * w.
func rmsnorm(out, x, w []float32, eps float32) {
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	scale := float32(1 / math.Sqrt(ss/float64(len(x))+float64(eps)))
	w = w[:len(x)]
	out = out[:len(x)]
	for i, v := range x {
		out[i] = v * scale * w[i]
	}
}

// headNorm RMS-normalises each head of x (heads of len(w)) in place,
// times w.
func headNorm(x, w []float32, eps float32) {
	for h := 0; h+len(w) <= len(x); h += len(w) {
		rmsnorm(x[h:h+len(w)], x[h:h+len(w)], w, eps)
	}
}

// maxGo uses four running maxima: one would wait on each comparison in
// turn.
func maxGo(x []float32) float32 {
	m := [4]float32{x[0], x[0], x[0], x[0]}
	i := 0
	for ; i+4 <= len(x); i += 4 {
		m[0], m[1], m[2], m[3] = max(m[0], x[i]), max(m[1], x[i+1]), max(m[2], x[i+2]), max(m[3], x[i+3])
	}
	for ; i < len(x); i++ {
		m[0] = max(m[0], x[i])
	}
	return max(m[0], m[1], m[2], m[3])
}

// add sets dst += src.
func add(dst, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] += src[i]
	}
}

// unpermuteHeads puts each head of x (head_dim floats) back in Hugging
// Face's order from llama.cpp's, whose converter moves row j·hd/2+i of a
// query or key head to row 2i+j (RoPE on adjacent pairs rather than on
// halves); tmp holds one head.
func unpermuteHeads(x []float32, hd int, tmp []float32) {
	half := hd / 2
	for h := 0; h+hd <= len(x); h += hd {
		head := x[h : h+hd]
		for i := 0; i < half; i++ {
			tmp[i], tmp[half+i] = head[2*i], head[2*i+1]
		}
		copy(head, tmp[:hd])
	}
}

// rope rotates each head of x (rotate-half layout: the first half of a head
// pairs with the second) by the angles whose cosines and sines are given.
func rope(x []float32, headDim int, cos, sin []float32) {
	half := headDim / 2
	cos, sin = cos[:half], sin[:half]
	for h := 0; h+headDim <= len(x); h += headDim {
		x1 := x[h : h+half]
		x2 := x[h+half : h+headDim]
		for i := range x1 {
			a, b := x1[i], x2[i]
			x1[i] = a*cos[i] - b*sin[i]
			x2[i] = b*cos[i] + a*sin[i]
		}
	}
}
