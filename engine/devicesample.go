package engine

// DeviceSampler is a Backend that can pick the next token where it
// computes the logits (a GPU's memory), so that they never come to the
// host and only token ids do. When SamplesOnDevice says so, the
// generator feeds tokens with ForwardKeep instead of Forward and asks
// Pick for each token instead of its Sampler, which only resolves the
// settings and makes the random draw (Sampler.Pick): the same settings,
// seed and logits give the same tokens as the host's sampling, up to the
// rounding of the weights' exponentials and sums (a draw that lands
// within that rounding of a boundary between two tokens).
type DeviceSampler interface {
	Backend
	// SamplesOnDevice says whether the backend, as loaded, picks tokens
	// on its device (a library too old for it, or an option, says no).
	SamplesOnDevice() bool
	// ForwardKeep is Forward that keeps the logits of the last token on
	// the device, with cache, for Pick and ReadLogits, instead of
	// writing them out.
	ForwardKeep(cache Cache, tokens []int32) error
	// Pick chooses a token from the logits ForwardKeep last kept in
	// cache as p says, by the Sampler's rules (see Sampler.Pick). tok is
	// -1 when p allows no token, NonFinite when the logits it would pick
	// from are broken (as Sampler.Sample says); top is the token of the
	// largest logit before any restriction or penalty, the first of
	// equal ones (-1 when none is finite).
	Pick(cache Cache, p *Pick) (tok, top int32, err error)
	// ReadLogits copies the kept logits to the host (to say what broke
	// when Pick returns NonFinite).
	ReadLogits(cache Cache, logits []float32) error
}

// Pick is one step's sampling for a DeviceSampler: the restriction, the
// Sampler's settings and its draw.
type Pick struct {
	// Mask, when not nil, is the bitset of the tokens that may be picked
	// (bit t%32 of word t/32), as a hook gave it; MaskPages, when not
	// nil, is the whole host memory pages that hold Mask, which a
	// backend may map as a device buffer without a copy (see
	// Directive.MaskPages). Allowed, when Mask is nil and Allowed is not,
	// lists the tokens that may be picked.
	Mask      []uint32
	MaskPages []byte
	Allowed   []int32
	// Temperature is the step's (the hook's or the configured one); 0
	// picks the most likely allowed token.
	Temperature float64
	TopK        int
	TopP, MinP  float64
	// RepeatPenalty applies, as the Sampler does, to each distinct token
	// of Penalised (the last RepeatLastN tokens of the sequence).
	RepeatPenalty float64
	Penalised     []int32
	// Draw is the uniform draw in [0, 1) that picks among the weighted
	// tokens when Temperature is more than 0.
	Draw float32
}

// Pick fills p for a step that samples from history's next logits at
// temperature (the configured one when it is negative), with the
// sampler's settings and, when the temperature is not 0, its next draw:
// the draw Sample would make, so that a sampler's sequence of tokens is
// the same on the host and on a device. The restriction is the caller's.
func (s *Sampler) Pick(p *Pick, history []int32, temperature float64) {
	if temperature < 0 {
		temperature = s.cfg.Temperature
	}
	p.Temperature, p.TopK, p.TopP, p.MinP = temperature, s.cfg.TopK, s.cfg.TopP, s.cfg.MinP
	p.RepeatPenalty, p.Penalised = s.cfg.RepeatPenalty, nil
	if n := s.cfg.RepeatLastN; s.cfg.RepeatPenalty != 1 && n > 0 {
		p.Penalised = history[max(0, len(history)-n):]
	}
	p.Draw = 0
	if temperature != 0 {
		p.Draw = s.rng.Float32()
	}
}
