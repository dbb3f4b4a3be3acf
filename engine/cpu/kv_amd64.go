package cpu

//go:noescape
func gemvTF16AVX2(out *float32, w *uint16, a *float32, rows, cols int)

//go:noescape
func gemvTBF16AVX2(out *float32, w *uint16, a *float32, rows, cols int)

// asmGemvT wraps a 16-bit gemvT kernel, checking the slices' lengths once.
func asmGemvT(f func(out *float32, w *uint16, a *float32, rows, cols int)) func([]float32, []uint16, []float32) {
	return func(out []float32, w []uint16, a []float32) {
		if len(a) > 0 && len(out) > 0 {
			_ = w[len(a)*len(out)-1]
			f(&out[0], &w[0], &a[0], len(a), len(out))
		}
	}
}

//go:noescape
func attnScores4F16AVX2(out *float32, stride int, k *uint16, q *float32, rows, hd int)

//go:noescape
func attnScores4BF16AVX2(out *float32, stride int, k *uint16, q *float32, rows, hd int)

//go:noescape
func attnScores4Q8AVX2(out *float32, stride int, k *int8, scales, q *float32, rows, hd int)

//go:noescape
func attnValues4F16AVX2(out *float32, v *uint16, a *float32, stride, rows, hd int)

//go:noescape
func attnValues4BF16AVX2(out *float32, v *uint16, a *float32, stride, rows, hd int)

//go:noescape
func attnValues4Q8AVX2(out *float32, v *int8, scales, a *float32, stride, rows, hd int)

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func gemvQ8_0AVX2(out *float32, codes *int8, scales, x *float32, rows, cols int)

//go:noescape
func gemvTQ8_0AVX2(out *float32, codes *int8, scales, a *float32, rows, cols int)

// asmQ8 wraps a q8_0 attention kernel (gemvQ8_0 or gemvTQ8_0: n is
// len(out) rows of len(v) columns, or len(v) rows of len(out)), falling
// back to the portable one when the columns are not whole blocks.
func asmQ8(f func(out *float32, codes *int8, scales, v *float32, rows, cols int), gemvT bool, fallback func([]float32, []int8, []float32, []float32)) func([]float32, []int8, []float32, []float32) {
	return func(out []float32, codes []int8, scales, v []float32) {
		rows, cols := len(out), len(v)
		if gemvT {
			rows, cols = cols, rows
		}
		if rows == 0 || cols == 0 || cols%32 != 0 {
			fallback(out, codes, scales, v)
			return
		}
		_, _ = codes[rows*cols-1], scales[rows*cols/32-1]
		f(&out[0], &codes[0], &scales[0], &v[0], rows, cols)
	}
}

//go:noescape
func attnValues4F16AVX512(out *float32, v *uint16, a *float32, stride, rows, hd int)

//go:noescape
func attnValues4BF16AVX512(out *float32, v *uint16, a *float32, stride, rows, hd int)

// values4X uses the AVX-512 four-head value kernel where hd is whole
// blocks of its 64 columns, the AVX2 one otherwise.
func values4X(wide, narrow func(*float32, *uint16, *float32, int, int, int)) func(*float32, *uint16, *float32, int, int, int) {
	return func(out *float32, v *uint16, a *float32, stride, rows, hd int) {
		if hd%64 == 0 {
			wide(out, v, a, stride, rows, hd)
		} else {
			narrow(out, v, a, stride, rows, hd)
		}
	}
}
