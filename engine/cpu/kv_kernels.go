package cpu

import (
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/half"
)

// The portable attention kernels over the KV cache's smaller types; the
// assembly sets replace the 16-bit ones (they widen in registers).

func gemvTF16Go(out []float32, w []uint16, a []float32) {
	d, tab := len(out), f16Table()
	for t, v := range a {
		row := w[t*d : (t+1)*d]
		for i, h := range row {
			out[i] += v * tab[h]
		}
	}
}

func gemvTBF16Go(out []float32, w []uint16, a []float32) {
	d := len(out)
	for t, v := range a {
		row := w[t*d : (t+1)*d]
		for i, h := range row {
			out[i] += v * half.BF16ToF32(h)
		}
	}
}

// gemvQ8_0Go sums each block's codes times x, then scales the block's
// sum once.
func gemvQ8_0Go(out []float32, codes []int8, scales, x []float32) {
	cols := len(x)
	per := cols / engine.Q8Block
	for r := range out {
		row := codes[r*cols : (r+1)*cols]
		var sum float32
		for b := range per {
			var s0, s1 float32
			blk, xb := row[b*engine.Q8Block:(b+1)*engine.Q8Block], x[b*engine.Q8Block:(b+1)*engine.Q8Block]
			for i := 0; i < engine.Q8Block; i += 2 {
				s0 += float32(blk[i]) * xb[i]
				s1 += float32(blk[i+1]) * xb[i+1]
			}
			sum += scales[r*per+b] * (s0 + s1)
		}
		out[r] = sum
	}
}

// gemvTQ8_0Go adds each row's codes times a[t]·scale.
func gemvTQ8_0Go(out []float32, codes []int8, scales, a []float32) {
	d := len(out)
	per := d / engine.Q8Block
	for t, v := range a {
		row := codes[t*d : (t+1)*d]
		for b := range per {
			f := v * scales[t*per+b]
			o := out[b*engine.Q8Block : (b+1)*engine.Q8Block]
			for i, q := range row[b*engine.Q8Block : (b+1)*engine.Q8Block] {
				o[i] += f * float32(q)
			}
		}
	}
}
