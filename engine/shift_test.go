package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// rotated is head x rotated by RoPE to position p (rotate-half layout).
func rotated(c *Config, x []float32, p int) []float32 {
	half := len(x) / 2
	out := make([]float32, len(x))
	for i, f := range c.InvFreq() {
		s, co := math.Sincos(float64(p) * f)
		a, b := float64(x[i]), float64(x[i+half])
		out[i], out[i+half] = float32(a*co-b*s), float32(b*co+a*s)
	}
	return out
}

// TestShiftKV builds a state whose keys are random heads rotated to their
// positions and checks that a shift leaves the kept prefix alone, moves
// the values, and leaves each moved key rotated to its new position.
func TestShiftKV(t *testing.T) {
	c := &Config{HeadDim: 16, RopeTheta: 500000, RopeScaling: &RopeScaling{RopeType: "llama3", Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}}
	const layers, heads, n = 2, 3, 300
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([][][][]float32, layers) // layer, head, position: the unrotated key
	s := &KVState{Len: n, KVHeads: heads, HeadDim: c.HeadDim, DType: safetensors.F32, K: make([][]byte, layers), V: make([][]byte, layers)}
	for l := range layers {
		s.K[l], s.V[l] = make([]byte, 4*heads*n*c.HeadDim), make([]byte, 4*heads*n*c.HeadDim)
		k, v := f32s(s.K[l]), f32s(s.V[l])
		raw[l] = make([][][]float32, heads)
		for h := range heads {
			raw[l][h] = make([][]float32, n)
			for p := range n {
				x := make([]float32, c.HeadDim)
				for i := range x {
					x[i] = rng.Float32()*2 - 1
					v[(h*n+p)*c.HeadDim+i] = float32(l*1e6 + h*1e4 + p)
				}
				raw[l][h][p] = x
				copy(k[(h*n+p)*c.HeadDim:], rotated(c, x, p))
			}
		}
	}
	const start, drop, keep = 40, 117, 120
	out, err := c.ShiftKV(s, start, drop, keep)
	if err != nil {
		t.Fatal(err)
	}
	if out.Len != start+keep {
		t.Fatalf("Len %d, want %d", out.Len, start+keep)
	}
	worst := 0.0
	for l := range layers {
		k, v := f32s(out.K[l]), f32s(out.V[l])
		for h := range heads {
			for p := range start + keep {
				from := p
				if p >= start {
					from = p + drop
				}
				want := rotated(c, raw[l][h][from], p)
				off := (h*out.Len + p) * c.HeadDim
				for i := range want {
					worst = max(worst, math.Abs(float64(k[off+i]-want[i])))
				}
				if got, want := v[off], float32(l*1e6+h*1e4+from); got != want {
					t.Fatalf("layer %d head %d position %d: value from %v, want %v", l, h, p, got, want)
				}
			}
		}
	}
	if worst > 1e-5 {
		t.Errorf("moved keys differ from keys rotated to their new positions by up to %g", worst)
	}
	if f32s(s.K[0])[0] != rotated(c, raw[0][0][0], 0)[0] {
		t.Error("the input state changed")
	}
}

func TestShiftKVErrors(t *testing.T) {
	c := &Config{HeadDim: 4, RopeTheta: 10000}
	s := &KVState{Len: 10, KVHeads: 1, HeadDim: 4, DType: safetensors.F32, K: [][]byte{make([]byte, 160)}, V: [][]byte{make([]byte, 160)}}
	for _, tc := range []struct{ start, drop, keep int }{{0, 5, 6}, {-1, 1, 1}, {2, 2, 7}} {
		if _, err := c.ShiftKV(s, tc.start, tc.drop, tc.keep); err == nil {
			t.Errorf("ShiftKV(%d, %d, %d) of 10 positions: no error", tc.start, tc.drop, tc.keep)
		}
	}
}

func TestKVStateHead(t *testing.T) {
	s := &KVState{Len: 3, KVHeads: 2, HeadDim: 1, DType: safetensors.F16,
		K: [][]byte{{1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}}, V: [][]byte{{7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12}}}
	h := s.Head(2)
	if h.Len != 2 || string(h.K[0]) != string([]byte{1, 1, 2, 2, 4, 4, 5, 5}) || string(h.V[0]) != string([]byte{7, 7, 8, 8, 10, 10, 11, 11}) {
		t.Errorf("Head(2) = %+v", h)
	}
}
