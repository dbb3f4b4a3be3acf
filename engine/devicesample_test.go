package engine_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
)

// vectorPick is the Sampler's rule written as a device computes it (the
// same steps as mlxbridge's Pick graph, over whole-vocabulary vectors):
// penalise, restrict, weights, cuts on the weights sorted heaviest first
// (a stable sort: ties by id), then the running sum in id order. It is
// the reference that ties the graph's formulation to Sampler.pick.
func vectorPick(raw []float32, p *engine.Pick) (tok, top int32) {
	n := len(raw)
	negInf := float32(math.Inf(-1))
	clean := func(l []float32) []float32 {
		out := make([]float32, n)
		for i, x := range l {
			out[i] = x
			if x != x {
				out[i] = negInf
			}
		}
		return out
	}
	argmax := func(l []float32) (int32, float32) {
		best, bi := l[0], int32(0)
		for i, x := range l {
			if x > best {
				best, bi = x, int32(i)
			}
		}
		return bi, best
	}
	top, tv := argmax(clean(raw))
	if tv == negInf {
		top = -1
	}
	l := slices.Clone(raw)
	if p.RepeatPenalty != 1 {
		pen := float32(p.RepeatPenalty)
		for _, id := range p.Penalised {
			if id >= 0 && int(id) < n {
				if v := raw[id]; v > 0 {
					l[id] = v / pen
				} else {
					l[id] = v * pen
				}
			}
		}
	}
	allowed := make([]bool, n)
	for i := range allowed {
		switch {
		case p.Mask != nil:
			allowed[i] = i/32 < len(p.Mask) && p.Mask[i/32]>>(i%32)&1 == 1
		case p.Allowed != nil:
			allowed[i] = slices.Contains(p.Allowed, int32(i))
		default:
			allowed[i] = true
		}
	}
	m := clean(l)
	nan := false
	for i := range m {
		if !allowed[i] {
			m[i] = negInf
		} else if l[i] != l[i] {
			nan = true
		}
	}
	best, maxL := argmax(m)
	switch {
	case maxL > math.MaxFloat32:
		return engine.NonFinite, top
	case maxL == negInf && nan:
		return engine.NonFinite, top
	case maxL == negInf:
		return -1, top
	case p.Temperature == 0:
		return best, top
	}
	inv := float32(1 / p.Temperature)
	w := make([]float32, n)
	for i, x := range m {
		w[i] = float32(math.Exp(float64((x - maxL) * inv)))
		if !(w[i] > 0 && w[i] >= float32(p.MinP)) {
			w[i] = 0
		}
	}
	if p.TopK > 0 || p.TopP < 1 {
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case w[a] > w[b]:
				return -1
			case w[a] < w[b]:
				return 1
			}
			return 0
		})
		keep := make([]bool, n)
		var heads float32
		for j, i := range order {
			keep[j] = w[i] > 0 && (p.TopK == 0 || p.TopK >= n || j < p.TopK)
			if keep[j] {
				heads += w[i]
			}
		}
		target, sum := float32(p.TopP)*heads, float32(0)
		kept := make([]bool, n)
		for j, i := range order {
			if keep[j] && p.TopP < 1 {
				keep[j] = sum < target
				sum += w[i]
			}
			kept[i] = keep[j]
		}
		for i := range w {
			if !kept[i] {
				w[i] = 0
			}
		}
	}
	var total float32
	for _, x := range w {
		total += x
	}
	r, cum, last := p.Draw*total, float32(0), int32(-1)
	for i, x := range w {
		cum += x
		if x > 0 {
			last = int32(i)
		}
		if cum > r {
			return int32(i), top
		}
	}
	return last, top
}

// vectorBackend is a backend that "samples on its device" with
// vectorPick, over a real backend's logits.
type vectorBackend struct {
	engine.Backend
	logits []float32
	picks  int
}

func (v *vectorBackend) SamplesOnDevice() bool { return true }

func (v *vectorBackend) ForwardKeep(c engine.Cache, tokens []int32) error {
	return v.Backend.Forward(c, tokens, v.logits)
}

func (v *vectorBackend) Pick(_ engine.Cache, p *engine.Pick) (int32, int32, error) {
	v.picks++
	tok, top := vectorPick(v.logits, p)
	return tok, top, nil
}

func (v *vectorBackend) ReadLogits(_ engine.Cache, logits []float32) error {
	copy(logits, v.logits)
	return nil
}

// pickConfigs are the sampler settings the device path is checked with.
var pickConfigs = []engine.SamplerConfig{
	{TopP: 1, RepeatPenalty: 1},
	{Temperature: 0.8, TopP: 1, RepeatPenalty: 1},
	{Temperature: 1, TopK: 5, TopP: 1, RepeatPenalty: 1},
	{Temperature: 1.2, TopP: 0.9, RepeatPenalty: 1},
	{Temperature: 0.7, TopK: 40, TopP: 0.95, MinP: 0.05, RepeatPenalty: 1},
	{Temperature: 1, TopP: 1, RepeatPenalty: 1.3, RepeatLastN: 8},
}

// TestPickMatchesSampler: on random logits, restricted by a mask, a list
// or nothing, the device's formulation of the rule (vectorPick, fed by
// Sampler.Pick's settings and draw) picks what the Sampler picks from the
// same seed, step after step, and reports the same top token.
func TestPickMatchesSampler(t *testing.T) {
	const vocab, steps = 300, 200
	rng := rand.New(rand.NewPCG(1, 2))
	for ci, cfg := range pickConfigs {
		cfg.Seed = uint64(ci + 7)
		host, dev := engine.NewSampler(cfg, vocab), engine.NewSampler(cfg, vocab)
		var history []int32
		for step := range steps {
			logits := make([]float32, vocab)
			for i := range logits {
				logits[i] = float32(rng.NormFloat64() * 3)
			}
			if step%50 == 7 {
				logits[rng.IntN(vocab)] = float32(math.NaN()) // never picked
			}
			var p engine.Pick
			kind := step % 3
			switch kind {
			case 1:
				p.Mask = make([]uint32, (vocab+31)/32)
				for i := range vocab {
					if rng.IntN(3) == 0 {
						p.Mask[i/32] |= 1 << (i % 32)
					}
				}
			case 2:
				for range 1 + rng.IntN(20) {
					p.Allowed = append(p.Allowed, int32(rng.IntN(vocab)))
				}
			}
			temp := -1.0
			if step%11 == 5 {
				temp = 0.5 // a hook's temperature
			}
			wantTop := engine.Argmax(logits)
			var want int32
			switch kind {
			case 1:
				want = host.SampleMask(slices.Clone(logits), p.Mask, history, temp)
			case 2:
				want = host.SampleAmong(slices.Clone(logits), slices.Clone(p.Allowed), history, temp)
			default:
				want = host.Sample(slices.Clone(logits), history, temp)
			}
			dev.Pick(&p, history, temp)
			got, top := vectorPick(logits, &p)
			if got != want || top != wantTop {
				t.Fatalf("config %d step %d (restriction %d): device picked %d (top %d), the sampler %d (top %d)", ci, step, kind, got, top, want, wantTop)
			}
			if want >= 0 {
				history = append(history, want)
			}
		}
	}
}

// TestPickBrokenLogits: what the device reports for logits it cannot
// pick from is what the Sampler returns.
func TestPickBrokenLogits(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		logits []float32
		mask   []uint32
		want   int32
	}{
		{[]float32{nan, nan, nan}, nil, engine.NonFinite},
		{[]float32{0, inf, 1}, nil, engine.NonFinite},
		{[]float32{0, nan, 1}, []uint32{0b010}, engine.NonFinite},
		{[]float32{0, 1, 2}, []uint32{0}, -1},
		{[]float32{float32(math.Inf(-1)), 1, 2}, []uint32{0b001}, -1},
	} {
		for _, temp := range []float64{0, 1} {
			s := engine.NewSampler(engine.SamplerConfig{Temperature: temp, TopP: 1, RepeatPenalty: 1}, 3)
			want := s.Sample(slices.Clone(c.logits), nil, -1)
			if c.mask != nil {
				want = s.SampleMask(slices.Clone(c.logits), c.mask, nil, -1)
			}
			p := engine.Pick{Mask: c.mask}
			s.Pick(&p, nil, -1)
			if got, _ := vectorPick(c.logits, &p); got != want || got != c.want {
				t.Errorf("%v mask %v at %g: device %d, sampler %d, want %d", c.logits, c.mask, temp, got, want, c.want)
			}
		}
	}
}

// TestGenerateOnDevice: the decode loop on a backend that samples on its
// device gives the same reply, events and statistics as on the host,
// through masks, lists, forced tokens, take-backs and the hook's
// temperature, and asks the backend for every token.
func TestGenerateOnDevice(t *testing.T) {
	s := newSetup(t, "tiny-f32")
	mask := make([]uint32, (s.vocab+31)/32)
	for i := range mask {
		mask[i] = 0x5555_5555 << (i % 2)
	}
	steps := map[int]engine.Directive{
		1: {Allowed: []int32{7, 9, 11}, Temperature: -1},
		2: {Mask: mask, Temperature: 0.7},
		3: {Force: []int32{40, 41}, Mask: mask, Temperature: -1},
		5: {Backtrack: 2, Temperature: -1},
		6: {Force: []int32{3}, Temperature: -1},
		9: {Stop: true},
	}
	for ci, cfg := range pickConfigs {
		cfg.Seed = 99
		run := func(b engine.Backend) ([]engine.Event, engine.Stats) {
			gen := engine.NewGenerator(b, engine.NewSampler(cfg, s.vocab), s.vocab)
			gen.Hook = &scriptHook{steps: steps}
			var events []engine.Event
			st, err := gen.Generate(context.Background(), s.sequence(t, 64), s.g.Prompt.IDs, func(e engine.Event) error {
				events = append(events, e)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			st.PromptDuration, st.GenDuration, st.HookFirst, st.HookWait = 0, 0, 0, 0
			return events, st
		}
		hostEvents, hostStats := run(s.b)
		vb := &vectorBackend{Backend: s.b, logits: make([]float32, s.vocab)}
		devEvents, devStats := run(vb)
		if !slices.Equal(hostEvents, devEvents) || hostStats != devStats {
			t.Errorf("config %d: on the device\n%v %+v\non the host\n%v %+v", ci, devEvents, devStats, hostEvents, hostStats)
		}
		if vb.picks < hostStats.GenTokens {
			t.Errorf("config %d: %d picks on the device for %d tokens", ci, vb.picks, hostStats.GenTokens)
		}
	}
}
