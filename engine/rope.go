package engine

import "math"

// InvFreq returns the rotary inverse frequencies of c (one per pair of a
// head's dimensions), with llama3 scaling applied when c.RopeScaling asks
// for it, or its factors when c.RopeFactors gives them. Every backend
// rotates with these.
func (c *Config) InvFreq() []float64 {
	d := c.HeadDim
	inv := make([]float64, d/2)
	for i := range inv {
		inv[i] = 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(d))
		if i < len(c.RopeFactors) {
			inv[i] /= c.RopeFactors[i]
		}
	}
	s := c.RopeScaling
	if s == nil || s.RopeType != "llama3" {
		return inv
	}
	L := float64(s.OriginalMaxPositionEmbeddings)
	lowWL, highWL := L/s.LowFreqFactor, L/s.HighFreqFactor
	for i, f := range inv {
		wl := 2 * math.Pi / f
		switch {
		case wl < highWL:
		case wl > lowWL:
			inv[i] = f / s.Factor
		default:
			sm := (L/wl - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			inv[i] = (1-sm)*f/s.Factor + sm*f
		}
	}
	return inv
}
