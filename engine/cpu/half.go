package cpu

import (
	"sync"

	"github.com/driftwoodlabs/driftwood/internal/half"
)

// f16Table maps every IEEE half-precision bit pattern to its float32 value.
// A 256 KiB table lookup is faster than the branchy conversion on the hot
// path; it is built once, on first use, and never changes.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = half.F16ToF32(uint16(i))
	}
	return &t
})
