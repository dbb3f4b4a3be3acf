package cpu

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/driftwoodlabs/driftwood/engine/gguf"
)

// The AVX-512 VNNI Q4_0 and Q4_1 decode kernels have two forms that give
// the same bits (blocks_i8_amd64.s): each block's d·dx broadcast from the
// frame, or picked from a register by VPERMPS. The register form was the
// faster on an AMD EPYC (for the k-quant kernels of the time), the frame
// form on an Intel AMX VM (Q4_0's 2048×2048 product 127 -> 102 µs, the
// 1B Q4_0 decode 17.9 -> 18.9-19.1 tok/s on one thread), so the first
// call times both on a product that stays in L2 and keeps the faster for
// the process (q4Form).

// q4Probe is the probe's result: whether the register form is the
// faster, and each form's median time of q4ProbeCalls products.
type q4Probe struct {
	register        bool
	frame, regTimed time.Duration
}

// q4Form says which form the probe chose, and the times it compared.
func q4Form() string {
	p := q4Chosen()
	form := "frame"
	if p.register {
		form = "register"
	}
	return fmt.Sprintf("%s form (the probe's %d products: frame %.0f µs, register %.0f µs)", form, q4ProbeCalls, p.frame.Seconds()*1e6, p.regTimed.Seconds()*1e6)
}

// The probe's product: q4ProbeRows rows of 2,048 weights (147 KB of
// Q4_0), q4ProbeCalls products a round, q4ProbeRounds rounds of each
// form, alternating: about a millisecond in all.
const (
	q4ProbeRows   = 128
	q4ProbeCalls  = 8
	q4ProbeRounds = 5
)

var q4Chosen = sync.OnceValue(func() q4Probe {
	const cols = 2048
	rng := rand.New(rand.NewPCG(1, 2))
	typ := gguf.Q4_0
	w := make([]byte, q4ProbeRows*cols/typ.BlockSize()*typ.BlockBytes())
	for i := range w {
		w[i] = byte(rng.Uint32())
	}
	for at := 0; at < len(w); at += typ.BlockBytes() {
		w[at], w[at+1] = 0, 0x3c // d = 1
	}
	xq, dx, xsum := make([]int8, cols), make([]float32, cols/32), make([]float32, cols/32)
	for i := range dx {
		dx[i] = 1
	}
	out := make([]float32, q4ProbeRows)
	time1 := func(f blockGemvAsm) time.Duration {
		start := time.Now()
		for range q4ProbeCalls {
			f(&out[0], &w[0], q4ProbeRows, len(w)/q4ProbeRows, &xq[0], &dx[0], &xsum[0], cols/32, 0)
		}
		return time.Since(start)
	}
	var ft, rt [q4ProbeRounds]time.Duration
	for i := range q4ProbeRounds {
		ft[i], rt[i] = time1(gemvQ4_0I8VNNI), time1(gemvQ4_0I8VNNIR)
	}
	slices.Sort(ft[:])
	slices.Sort(rt[:])
	p := q4Probe{frame: ft[q4ProbeRounds/2], regTimed: rt[q4ProbeRounds/2]}
	p.register = p.regTimed < p.frame
	return p
})

// q4Gemv is a Q4 kernel whose form the probe chooses.
func q4Gemv(frame, register blockGemvAsm, typ gguf.Type) blockGemvI8 {
	f, r := asmBlockGemv(frame, typ), asmBlockGemv(register, typ)
	return func(out []float32, w []byte, xq []int8, dx, xsum []float32, bs []int16) {
		if q4Chosen().register {
			r(out, w, xq, dx, xsum, bs)
			return
		}
		f(out, w, xq, dx, xsum, bs)
	}
}
