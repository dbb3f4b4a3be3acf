package half

import (
	"math"
	"testing"
)

// TestRoundTrips: every half and bfloat16 widens and rounds back to
// itself (NaNs to a NaN), and rounding goes to the nearer neighbour with
// ties to the even one.
func TestRoundTrips(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		if f := F16ToF32(h); f == f && F32ToF16(f) != h {
			t.Fatalf("f16 %#04x → %g → %#04x", h, f, F32ToF16(f))
		} else if f != f && F16ToF32(F32ToF16(f)) == F16ToF32(F32ToF16(f)) {
			t.Fatalf("f16 NaN %#04x rounds to a number", h)
		}
		if f := BF16ToF32(h); f == f && F32ToBF16(f) != h {
			t.Fatalf("bf16 %#04x → %g → %#04x", h, f, F32ToBF16(f))
		}
	}
	for _, tc := range []struct {
		f        float32
		f16, b16 uint16
	}{
		{1 + 1.0/2048, 0x3c00, 0x3f80},          // a tie between 1 and its neighbour: to 1, the even one
		{1 + 3.0/2048, 0x3c02, 0x3f80},          // a tie to the odd's upper neighbour
		{65520, 0x7c00, 0x4780},                 // rounds past the largest half: +Inf
		{float32(math.Inf(-1)), 0xfc00, 0xff80}, // -Inf stays
		{1e-8, 0x0000, 0x322c},                  // below half the smallest subnormal half
	} {
		if got := F32ToF16(tc.f); got != tc.f16 {
			t.Errorf("F32ToF16(%g) = %#04x, want %#04x", tc.f, got, tc.f16)
		}
		if got := F32ToBF16(tc.f); got != tc.b16 {
			t.Errorf("F32ToBF16(%g) = %#04x, want %#04x", tc.f, got, tc.b16)
		}
	}
}
