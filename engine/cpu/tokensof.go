package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine"
)

// A KV state's token ids can be read back from its values: the first
// layer's values do not depend on position (RoPE turns keys only, and
// there is no attention before them), so the values at position p are
// W_v·rmsnorm(embed(token_p))·w (+ the bias of a Qwen2), a function of
// the token alone. RecoverTokens computes them for every token of the
// vocabulary and takes, at each position, the token whose values are
// nearest. It is how a prompt cache that mlx-lm saved, which keeps no
// token ids, becomes a session.

// Recovered is what RecoverTokens found.
type Recovered struct {
	// IDs are the tokens, one per position.
	IDs []int32
	// Dist is the largest distance (L2) of a position's first-layer
	// values from its token's, over the size of the position's values: 0
	// for a state this backend made in f32, a few per cent for a
	// quantised one.
	Dist float64
	// Margin is the smallest ratio, over the positions the values tell
	// apart, of the distance to the runner-up token's values to the
	// distance to the match's (+Inf when every match is exact).
	Margin float64
	// DistAt and MarginAt are the positions of those extremes.
	DistAt, MarginAt int
	// Replayed are the positions whose first-layer values were as near
	// to more than one token, each decided by running the model on the
	// candidates after the state's earlier positions and comparing every
	// layer's keys and values with the state's.
	Replayed []int
	// Likely are the positions that not even the replay told apart, taken
	// as the one candidate among the likely tokens the caller gave.
	Likely []int
}

// Bounds of a recovery. Quantised caches hold the values within a few per
// cent (mlx-lm's 4-bit codes, groups of 32: 9% of the values' size on the
// tiny test models); the values of another model's cache lie about as
// far from every token's as their own size.
const (
	// RecoverMaxDist is the largest distance of a position's values from
	// its token's, over their size, that RecoverTokens accepts.
	RecoverMaxDist = 0.4
	// RecoverMinMargin is how many times farther than the match the
	// runner-up must be, by the first layer's values or, where they do
	// not tell, by every layer's keys and values.
	RecoverMinMargin = 2.0
	// RecoverMaxReplay is the largest distance of every layer's keys and
	// values at a position replayed from the state's, over their size,
	// that RecoverTokens accepts (a 4-bit cache of a trained model: 16%).
	RecoverMaxReplay = 0.5
)

// recoverTop is how many of the nearest tokens the scan keeps for each
// position: the candidates a replay tries.
const recoverTop = 4

// RecoverTokens returns the token ids whose first-layer values kv holds,
// in any of its types, recovered as the file comment says. Where the
// values are nearly as near to another token's (a coarse quantisation, a
// trained model's rare tokens whose embeddings lie close), the nearest
// few tokens are each run through the model after kv's earlier positions
// (kv's own state, imported), and the one that gives kv's keys and
// values in every layer is taken. Where that does not tell either (a
// state's first position holds much the same keys and values whatever
// its token, and a 4-bit cache blurs a trained model's rarely seen
// tokens, its special ones among them, into their neighbours), the one
// candidate among likely, if one is, is taken: the tokens a chat
// template writes, say. It refuses a state whose values at some position
// are not near any token's (RecoverMaxDist: not made with this model) or
// where the tokens cannot be told apart (RecoverMinMargin) and likely
// does not decide. It uses the backend's scratch space: not while
// Forward runs.
//
// It costs the first layer's value projection of the whole vocabulary
// (vocab × hidden × kv_heads·head_dim multiply-adds) and a product of the
// positions' values with the vocabulary's (positions × vocab ×
// kv_heads·head_dim), both on the backend's matrix kernels in batches of
// its maximum batch; and a token's forward pass (and an import and export
// of the positions before it) per candidate of each position replayed.
func (b *Backend) RecoverTokens(kv *engine.KVState, likely []int32) (*Recovered, error) {
	if b.pool == nil {
		panic("cpu: RecoverTokens on a closed backend")
	}
	cfg, st := b.cfg, &b.st
	if err := cfg.ValidateKV(kv, kv.Len); err != nil {
		return nil, err
	}
	n := kv.Len
	kvDim := cfg.NumKeyValueHeads * cfg.HeadDim
	rec := &Recovered{IDs: make([]int32, n), Margin: math.Inf(1)}
	if n == 0 {
		return rec, nil
	}
	vals := layer0Values(kv) // (n, kvDim)
	scan := &recoverScan{n: n, top: make([]float32, n*recoverTop), topID: make([]int32, n*recoverTop),
		tn: make([]float32, st.maxBatch), dots: make([]float32, st.maxBatch*n)}
	for i := range scan.top {
		scan.top[i], scan.topID[i] = float32(math.Inf(1)), -1
	}
	positions := part{&f32Matrix{dense{n, kvDim, b.ks}, vals}, scan.dots}
	vocab := cfg.VocabSize
	for t0 := 0; t0 < vocab; t0 += st.maxBatch {
		m := min(st.maxBatch, vocab-t0)
		b.tokenValues(t0, m)
		for i := range m {
			v := st.v[i*kvDim : (i+1)*kvDim]
			scan.tn[i] = dotGo(v, v)
		}
		// dots[i·n + p] = values of token t0+i · values at position p
		b.matmul(st.v, m, positions)
		scan.t0, scan.m = t0, m
		b.pool.parallel(scan, n, 16)
	}
	for p := range n {
		rec.IDs[p] = scan.topID[p*recoverTop]
	}
	// The scan's distances lose digits to cancellation (|v|² − 2v·t +
	// |t|²), so the matches' are computed again, exactly.
	exact := make([]float64, n)
	for p0 := 0; p0 < n; p0 += st.maxBatch {
		m := min(st.maxBatch, n-p0)
		for i := range m {
			b.tokenValuesOf(i, rec.IDs[p0+i])
		}
		b.project(m)
		for i := range m {
			v, want := st.v[i*kvDim:(i+1)*kvDim], vals[(p0+i)*kvDim:(p0+i+1)*kvDim]
			var d float64
			for j, x := range want {
				e := float64(x) - float64(v[j])
				d += e * e
			}
			exact[p0+i] = d
		}
	}
	var far, unclear []int
	var dists []float64
	replay := &replayer{b: b, kv: kv}
	defer replay.close()
	for p := range n {
		size := sqNorm(vals[p*kvDim : (p+1)*kvDim])
		dist := math.Sqrt(exact[p] / max(size, 1e-30))
		dists = append(dists, dist)
		if dist > rec.Dist || p == 0 {
			rec.Dist, rec.DistAt = dist, p
		}
		if dist > RecoverMaxDist {
			far = append(far, p)
			continue
		}
		// The other candidates' squared distances are the scan's: large
		// unless they are near the match's, which the replay then decides.
		top, ids := scan.top[p*recoverTop:(p+1)*recoverTop], scan.topID[p*recoverTop:(p+1)*recoverTop]
		// slack covers the scan's rounding, relative to the sizes.
		slack := 1e-5 * size
		cands := ids[:1]
		for j := 1; j < recoverTop && ids[j] >= 0; j++ {
			if float64(top[j])+size < RecoverMinMargin*RecoverMinMargin*exact[p]+slack {
				cands = ids[:j+1]
			}
		}
		if len(cands) == 1 {
			margin := math.Inf(1)
			if ids[1] >= 0 && exact[p] > 0 {
				margin = math.Sqrt(max(float64(top[1])+size, 0) / exact[p])
			}
			if margin < rec.Margin {
				rec.Margin, rec.MarginAt = margin, p
			}
			continue
		}
		id, near, err := replay.decide(p, cands)
		switch {
		case err != nil:
			return nil, err
		case id >= 0:
			rec.IDs[p] = id
			rec.Replayed = append(rec.Replayed, p)
		default:
			var picked []int32
			for _, t := range near {
				if slices.Contains(likely, t) {
					picked = append(picked, t)
				}
			}
			if len(picked) != 1 {
				unclear = append(unclear, p)
				continue
			}
			rec.IDs[p] = picked[0]
			rec.Likely = append(rec.Likely, p)
		}
	}
	if len(far) > 0 {
		p := far[0]
		return nil, fmt.Errorf("the first layer's values at position %d of %d lie %.0f%% of their size from the nearest token's (token %d), more than %.0f%%%s: the cache was not made with this model, or its weights differ",
			p, n, 100*dists[p], rec.IDs[p], 100*RecoverMaxDist, others(len(far), "lies as far", "lie as far"))
	}
	if len(unclear) > 0 {
		p := unclear[0]
		return nil, fmt.Errorf("which token the cache holds at position %d of %d cannot be told: the first layer's values there are as near to tokens %v, and running the model on each after the earlier positions gives keys and values %s of their size from the cache's in every layer, where the nearest must be %.0f times nearer than the next, and %s%s",
			p, n, replay.cands[p], replay.said[p], RecoverMinMargin, likelyAmong(len(likely)), others(len(unclear), "is as unclear", "are as unclear"))
	}
	return rec, nil
}

// replayer decides between tokens at a position by running each through
// the model after the state's earlier positions.
type replayer struct {
	b  *Backend
	kv *engine.KVState
	c  engine.Cache
	// logits is the forward pass's output, unused.
	logits []float32
	// cands and said are, for each position left unclear, the tokens
	// tried and the distances they gave, for the error.
	cands map[int][]int32
	said  map[int]string
}

func (r *replayer) close() {
	if r.c != nil {
		r.c.Close()
	}
}

// decide returns the candidate at position p whose keys and values, in
// every layer, are nearest the state's, or -1 and the candidates that
// are not RecoverMinMargin times farther than the nearest (the nearest
// first) when that does not tell.
func (r *replayer) decide(p int, cands []int32) (int32, []int32, error) {
	if r.c == nil {
		c, err := r.b.NewCache(r.kv.Len)
		if err != nil {
			return 0, nil, fmt.Errorf("replaying position %d: %w", p, err)
		}
		r.c, r.logits = c, make([]float32, r.b.cfg.VocabSize)
		r.cands, r.said = map[int][]int32{}, map[int]string{}
	}
	r.c.Truncate(0)
	if p > 0 {
		if err := r.c.Import(r.kv.Head(p)); err != nil {
			return 0, nil, fmt.Errorf("replaying position %d: %w", p, err)
		}
	}
	want := atPosition(r.kv, p)
	size := math.Sqrt(sqNorm(want))
	dists := make([]float64, len(cands))
	for i, t := range cands {
		r.c.Truncate(p)
		if err := r.b.Forward(r.c, []int32{t}, r.logits); err != nil {
			return 0, nil, fmt.Errorf("replaying position %d: %w", p, err)
		}
		out, err := r.c.Export()
		if err != nil {
			return 0, nil, fmt.Errorf("replaying position %d: %w", p, err)
		}
		var d float64
		for j, x := range atPosition(out, p) {
			e := float64(x) - float64(want[j])
			d += e * e
		}
		dists[i] = math.Sqrt(d) / max(size, 1e-30)
	}
	best := 0
	for i, d := range dists {
		if d < dists[best] {
			best = i
		}
	}
	if dists[best] > RecoverMaxReplay {
		return 0, nil, fmt.Errorf("the first layer's values at position %d are as near to tokens %v, but running the model on each after the earlier positions gives keys and values no nearer than %.0f%% of their size to the cache's, more than %.0f%%: the cache was not made with this model, or its weights differ",
			p, cands, 100*dists[best], 100*RecoverMaxReplay)
	}
	// Within replayFloor of the best, candidates are as near: a best
	// replay can land within rounding of the cache (its distance ~0),
	// where a ratio says nothing (a twin token's replay, rounded on
	// another kernel path, came out "more than twice as far" on arm64).
	const replayFloor = 0.01
	near := []int32{cands[best]}
	for i, d := range dists {
		if i != best && d < RecoverMinMargin*dists[best]+replayFloor {
			near = append(near, cands[i])
		}
	}
	if len(near) == 1 {
		return cands[best], nil, nil
	}
	said := make([]string, len(dists))
	for i, d := range dists {
		said[i] = fmt.Sprintf("%.0f%%", 100*d)
	}
	r.cands[p], r.said[p] = slices.Clone(cands), strings.Join(said, ", ")
	return -1, near, nil
}

// likelyAmong says that likely tokens did not decide.
func likelyAmong(n int) string {
	if n == 0 {
		return "no likely tokens were given to decide"
	}
	return "not one alone of those is among the likely tokens"
}

// atPosition is every layer's keys, then values, at position p of kv, as
// float32.
func atPosition(kv *engine.KVState, p int) []float32 {
	one := &engine.KVState{Len: 1, KVHeads: kv.KVHeads, HeadDim: kv.HeadDim, DType: kv.DType}
	// pick copies position p of each head of each layer of ts, rows of
	// row bytes.
	pick := func(ts [][]byte, row int) [][]byte {
		out := make([][]byte, len(ts))
		for l, t := range ts {
			for h := range kv.KVHeads {
				out[l] = append(out[l], t[(h*kv.Len+p)*row:(h*kv.Len+p+1)*row]...)
			}
		}
		return out
	}
	row := kv.HeadDim * kv.DType.Size()
	if q := kv.Quant; q != nil {
		row = kv.HeadDim * q.Bits / 8
		srow := kv.HeadDim / q.Group * q.ScaleDType.Size()
		one.Quant = &engine.KVQuant{Group: q.Group, Bits: q.Bits, ScaleDType: q.ScaleDType,
			KScales: pick(q.KScales, srow), KBiases: pick(q.KBiases, srow),
			VScales: pick(q.VScales, srow), VBiases: pick(q.VBiases, srow)}
	}
	one.K, one.V = pick(kv.K, row), pick(kv.V, row)
	f := one.Convert(engine.KVF32)
	var out []float32
	for _, part := range [][][]byte{f.K, f.V} {
		for _, b := range part {
			for i := 0; i+4 <= len(b); i += 4 {
				out = append(out, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
			}
		}
	}
	return out
}

// others says how many positions besides the first of count are like
// it ("" for none): one, then the rest of the sentence for one and for
// more.
func others(count int, one, more string) string {
	switch count {
	case 1:
		return ""
	case 2:
		return "; 1 other position " + one
	}
	return fmt.Sprintf("; %d other positions %s", count-1, more)
}

func sqNorm(x []float32) float64 {
	var s float64
	for _, v := range x {
		s += float64(v) * float64(v)
	}
	return s
}

// tokenValues sets st.v to the first layer's values of the m tokens from
// t0.
func (b *Backend) tokenValues(t0, m int) {
	for i := range m {
		b.tokenValuesOf(i, int32(t0+i))
	}
	b.project(m)
}

// tokenValuesOf puts token t's embedding in row i of st.x.
func (b *Backend) tokenValuesOf(i int, t int32) {
	hidden := b.cfg.HiddenSize
	b.embed.row(b.st.x[i*hidden:(i+1)*hidden], int(t))
}

// project sets st.v to the first layer's values of the m embeddings in
// st.x, as forward computes them.
func (b *Backend) project(m int) {
	st, L := &b.st, &b.layers[0]
	kvDim := b.cfg.NumKeyValueHeads * b.cfg.HeadDim
	b.norm(st.xb, st.x, L.inputLayernorm, m)
	b.matmul(st.xb, m, part{L.vProj, st.v})
	if b.fam.qkvBias {
		for i := range m {
			add(st.v[i*kvDim:(i+1)*kvDim], L.vBias)
		}
	}
}

// layer0Values is kv's first layer's values as float32, one row of
// kv_heads·head_dim per position.
func layer0Values(kv *engine.KVState) []float32 {
	l0 := &engine.KVState{Len: kv.Len, KVHeads: kv.KVHeads, HeadDim: kv.HeadDim, DType: kv.DType,
		K: kv.K[:1], V: kv.V[:1]}
	if q := kv.Quant; q != nil {
		l0.Quant = &engine.KVQuant{Group: q.Group, Bits: q.Bits, ScaleDType: q.ScaleDType,
			KScales: q.KScales[:1], KBiases: q.KBiases[:1], VScales: q.VScales[:1], VBiases: q.VBiases[:1]}
	}
	src := l0.Convert(engine.KVF32).V[0] // (kv_heads, len, head_dim)
	n, heads, hd := kv.Len, kv.KVHeads, kv.HeadDim
	out := make([]float32, n*heads*hd)
	for h := range heads {
		for p := range n {
			for d := range hd {
				out[(p*heads+h)*hd+d] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*((h*n+p)*hd+d):]))
			}
		}
	}
	return out
}

// recoverScan keeps, for each position, the recoverTop tokens of this
// batch and the ones before whose values are nearest, by |t|² − 2v·t (the
// squared distance less the position's |v|²), nearest first.
type recoverScan struct {
	n, t0, m int
	tn       []float32 // (m) |t|² of the batch's tokens
	dots     []float32 // (m, n)
	top      []float32 // (n, recoverTop)
	topID    []int32
}

func (s *recoverScan) run(lo, hi, _ int) {
	for i := range s.m {
		id, tn := int32(s.t0+i), s.tn[i]
		row := s.dots[i*s.n : (i+1)*s.n]
		for p := lo; p < hi; p++ {
			d := tn - 2*row[p]
			top := s.top[p*recoverTop : (p+1)*recoverTop]
			if d >= top[recoverTop-1] {
				continue
			}
			ids := s.topID[p*recoverTop : (p+1)*recoverTop]
			j := recoverTop - 1
			for ; j > 0 && d < top[j-1]; j-- {
				top[j], ids[j] = top[j-1], ids[j-1]
			}
			top[j], ids[j] = d, id
		}
	}
}
