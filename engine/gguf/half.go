package gguf

import "github.com/driftwoodlabs/driftwood/internal/half"

// halfUp is the smallest positive finite half not below f (f ≥ 0), or the
// largest finite half: a block scale rounded this way covers the weights
// it was computed from.
func halfUp(f float32) uint16 {
	h := half.F32ToF16(f)
	if h >= 0x7c00 {
		return 0x7bff
	}
	if half.F16ToF32(h) < f {
		h++
	}
	return min(h, 0x7bff)
}
