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
