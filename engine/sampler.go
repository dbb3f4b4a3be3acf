package engine

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// SamplerConfig chooses how the next token is picked from the logits.
type SamplerConfig struct {
	// Temperature divides the logits; 0 picks the most likely token.
	Temperature float64 `toml:"temperature"`
	// TopK keeps the K most likely tokens; 0 keeps all.
	TopK int `toml:"top_k"`
	// TopP keeps the smallest set of tokens whose probability reaches P; 1 keeps all.
	TopP float64 `toml:"top_p"`
	// MinP drops tokens less likely than MinP times the most likely; 0 keeps all.
	MinP float64 `toml:"min_p"`
	// RepeatPenalty divides positive and multiplies negative logits of the
	// last RepeatLastN tokens (as transformers does); 1 is off.
	RepeatPenalty float64 `toml:"repeat_penalty"`
	RepeatLastN   int     `toml:"repeat_last_n"`
	// Seed makes sampling reproducible: the same seed, settings and prompt
	// give the same reply. 0, the default, draws a fresh seed for every
	// sampler, so that each reply is a new sample (Sampler.Seed says
	// which was drawn, to reproduce it).
	Seed uint64 `toml:"seed"`
}

// DefaultSamplerConfig is Llama 3.2 Instruct's recommended sampling.
func DefaultSamplerConfig() SamplerConfig {
	return SamplerConfig{Temperature: 0.6, TopP: 0.9, RepeatPenalty: 1, RepeatLastN: 64}
}

// Validate reports the first setting out of range.
func (c SamplerConfig) Validate() error {
	switch {
	case c.Temperature < 0 || math.IsNaN(c.Temperature):
		return fmt.Errorf("temperature %g: must be 0 or more", c.Temperature)
	case c.TopK < 0:
		return fmt.Errorf("top_k %d: must be 0 (off) or more", c.TopK)
	case !(c.TopP > 0 && c.TopP <= 1):
		return fmt.Errorf("top_p %g: must be in (0, 1]", c.TopP)
	case !(c.MinP >= 0 && c.MinP < 1):
		return fmt.Errorf("min_p %g: must be in [0, 1)", c.MinP)
	case !(c.RepeatPenalty > 0):
		return fmt.Errorf("repeat_penalty %g: must be more than 0 (1 is off)", c.RepeatPenalty)
	case c.RepeatLastN < 0:
		return fmt.Errorf("repeat_last_n %d: must be 0 or more", c.RepeatLastN)
	}
	return nil
}

// Sampler picks tokens from logits. It allocates its scratch once, so
// sampling allocates nothing. Not safe for concurrent use.
type Sampler struct {
	cfg   SamplerConfig
	seed  uint64
	rng   *rand.Rand
	cand  []int32   // candidate token ids
	w     []float32 // unnormalised probabilities, by token id
	stamp []uint32  // repetition penalty: last round each token was penalised
	round uint32
}

// NewSampler returns a sampler for a vocabulary of vocab tokens.
func NewSampler(cfg SamplerConfig, vocab int) *Sampler {
	seed := cfg.Seed
	for seed == 0 { // 0 asks for a fresh one, so never draw it
		seed = rand.Uint64()
	}
	return &Sampler{
		cfg:   cfg,
		seed:  seed,
		rng:   rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		cand:  make([]int32, vocab),
		w:     make([]float32, vocab),
		stamp: make([]uint32, vocab),
	}
}

// Config returns the sampler's settings.
func (s *Sampler) Config() SamplerConfig { return s.cfg }

// Seed is the seed the sampler draws from: its settings' Seed, or the
// fresh one drawn for it when that is 0.
func (s *Sampler) Seed() uint64 { return s.seed }

// NonFinite is what the sampling methods return instead of a token when
// the logits they would pick from are broken: the largest is +Inf, or
// none is finite and some are NaN (broken weights or a broken backend).
// A NaN among finite logits is only never picked: finding it would cost a
// pass over the vocabulary at every step.
const NonFinite int32 = -2

// Sample picks a token from logits, which it may modify. history is the
// sequence so far (for the repetition penalty); temperature overrides the
// configured one when it is 0 or more (a controller's per-step setting).
// Tokens whose logit is -Inf (masked) are never picked; if every token is
// masked, Sample returns -1; see NonFinite for NaN and +Inf.
func (s *Sampler) Sample(logits []float32, history []int32, temperature float64) int32 {
	s.penalise(logits, history)
	cand := s.cand[:0]
	for i := range logits {
		cand = append(cand, int32(i))
	}
	return s.pick(logits, cand, temperature)
}

// SampleAmong is Sample restricted to the tokens in allowed (a sparse
// mask, in any order, repeats counting once): the rest of the vocabulary is not read. Ids outside
// the vocabulary are ignored; if none is left, it returns -1 (NonFinite
// as for Sample).
func (s *Sampler) SampleAmong(logits []float32, allowed, history []int32, temperature float64) int32 {
	s.penalise(logits, history)
	cand := s.cand[:0]
	for _, id := range allowed {
		if id >= 0 && int(id) < len(logits) && len(cand) < len(s.cand) {
			cand = append(cand, id)
		}
	}
	if !slices.IsSorted(cand) {
		slices.Sort(cand)
	}
	return s.pick(logits, slices.Compact(cand), temperature) // a token listed twice counts once
}

// SampleMask is Sample restricted to the tokens whose bit is set in mask
// (bit t%32 of word t/32): only the allowed tokens' logits are read. If
// none is allowed, it returns -1 (NonFinite as for Sample).
func (s *Sampler) SampleMask(logits []float32, mask []uint32, history []int32, temperature float64) int32 {
	s.penalise(logits, history)
	cand := s.cand[:0]
	for i, w := range mask {
		for w != 0 {
			id := i*32 + bits.TrailingZeros32(w)
			if id >= len(logits) {
				break
			}
			cand = append(cand, int32(id))
			w &= w - 1
		}
	}
	return s.pick(logits, cand, temperature)
}

// pick chooses among cand, in ascending id order (which it may change),
// by the sampler's rules: the most likely candidate at temperature 0;
// otherwise the candidates are weighted exp((logit − max)/temperature),
// those under min_p dropped, the top_k heaviest kept, then the smallest
// set, heaviest first (ties by id), whose weight reaches top_p; one
// uniform draw r in [0, 1) times their total weight then picks, walking
// them in id order, the first whose running sum passes r. The walk's
// order is fixed so that a backend that samples on its device (Pick)
// makes the same choice from the same draw.
func (s *Sampler) pick(logits []float32, cand []int32, temperature float64) int32 {
	if temperature < 0 {
		temperature = s.cfg.Temperature
	}
	var u float32
	if temperature != 0 {
		u = s.rng.Float32() // drawn first, as Pick does, whatever follows
	}
	best, maxL := int32(-1), float32(math.Inf(-1))
	for _, id := range cand {
		if l := logits[id]; l > maxL || (l == maxL && id < best) {
			best, maxL = id, l
		}
	}
	if best < 0 || maxL > math.MaxFloat32 {
		return s.unpickable(logits, cand, best)
	}
	if temperature == 0 {
		return best
	}
	// Weights relative to the best token (which gets 1), then min-p.
	inv := float32(1 / temperature)
	floor := float32(s.cfg.MinP)
	kept := cand[:0]
	for _, id := range cand {
		w := float32(math.Exp(float64((logits[id] - maxL) * inv)))
		s.w[id] = w
		if w > 0 && w >= floor {
			kept = append(kept, id)
		}
	}
	cand = kept
	if k := s.cfg.TopK; k > 0 && k < len(cand) {
		s.selectTop(cand, k)
		cand = cand[:k]
	}
	if s.cfg.TopP < 1 {
		cand = s.nucleus(cand)
	}
	if s.cfg.TopK > 0 || s.cfg.TopP < 1 {
		slices.Sort(cand) // the walk is in id order; the cuts reordered
	}
	var total float32
	for _, id := range cand {
		total += s.w[id]
	}
	r := u * total
	for _, id := range cand {
		r -= s.w[id]
		if r < 0 {
			return id
		}
	}
	return cand[len(cand)-1]
}

// unpickable is pick's answer when it found no finite maximum: NonFinite
// for a +Inf maximum or a NaN among the candidates, else -1 (every
// candidate masked, or none).
func (s *Sampler) unpickable(logits []float32, cand []int32, best int32) int32 {
	if best >= 0 {
		return NonFinite
	}
	for _, id := range cand {
		if l := logits[id]; l != l {
			return NonFinite
		}
	}
	return -1
}

// penalise applies the repetition penalty once to each distinct token of
// the last RepeatLastN tokens of history.
func (s *Sampler) penalise(logits []float32, history []int32) {
	p := float32(s.cfg.RepeatPenalty)
	if p == 1 || s.cfg.RepeatLastN == 0 {
		return
	}
	if n := s.cfg.RepeatLastN; len(history) > n {
		history = history[len(history)-n:]
	}
	s.round++
	if s.round == 0 { // wrapped: clear the stamps
		clear(s.stamp)
		s.round = 1
	}
	for _, id := range history {
		if id < 0 || int(id) >= len(logits) || s.stamp[id] == s.round {
			continue
		}
		s.stamp[id] = s.round
		if logits[id] > 0 {
			logits[id] /= p
		} else {
			logits[id] *= p
		}
	}
}

// nucleus sorts cand by weight, most likely first, and keeps the shortest
// prefix whose mass reaches TopP. To avoid sorting a whole vocabulary it
// first tries growing top-m prefixes selected in linear time.
func (s *Sampler) nucleus(cand []int32) []int32 {
	var total float32
	for _, id := range cand {
		total += s.w[id]
	}
	target := float32(s.cfg.TopP) * total
	for m := 64; ; m *= 8 {
		if m >= len(cand) {
			m = len(cand)
		} else {
			s.selectTop(cand, m)
		}
		head := cand[:m]
		slices.SortFunc(head, func(a, b int32) int {
			if s.w[a] != s.w[b] {
				if s.w[a] > s.w[b] {
					return -1
				}
				return 1
			}
			return int(a - b)
		})
		var sum float32
		for i, id := range head {
			sum += s.w[id]
			if sum >= target {
				return cand[:i+1]
			}
		}
		if m == len(cand) {
			return cand
		}
	}
}

// selectTop reorders cand so that its first k entries are the k heaviest
// (in no particular order): quickselect, linear time on average.
func (s *Sampler) selectTop(cand []int32, k int) {
	lo, hi := 0, len(cand)-1
	for lo < hi {
		// Median of three as the pivot keeps sorted input linear.
		mid := lo + (hi-lo)/2
		p := s.w[cand[mid]]
		if a, b := s.w[cand[lo]], s.w[cand[hi]]; (a > p) != (a > b) {
			p = a
		} else if (b > p) != (b > a) {
			p = b
		}
		i, j := lo, hi
		for i <= j {
			for s.w[cand[i]] > p {
				i++
			}
			for s.w[cand[j]] < p {
				j--
			}
			if i <= j {
				cand[i], cand[j] = cand[j], cand[i]
				i++
				j--
			}
		}
		switch {
		case k-1 <= j:
			hi = j
		case k-1 >= i:
			lo = i
		default:
			return
		}
	}
}

// Argmax returns the index of the largest logit, the first on ties, or -1
// when every logit is -Inf or NaN.
func Argmax(logits []float32) int32 {
	best, bi := float32(math.Inf(-1)), int32(-1)
	for i, l := range logits {
		if l > best {
			best, bi = l, int32(i)
		}
	}
	return bi
}
