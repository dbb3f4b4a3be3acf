package cpu

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// BenchmarkInt8Quality measures what integer activations cost in quality,
// not time: over the tokens of a real text, fed one at a time to two
// backends of the model in $DRIFTWOOD_QUALITY_MODEL (one on the float
// reference kernels, one on the int8 set in use, which DRIFTWOOD_KERNELS
// may name, or else the fastest), the mean KL divergence of the
// int8 next-token distribution from the float one, and how often their
// top-1 tokens agree. As a yardstick it measures the same for a third
// backend on the float kernels whose affine matmuls round their input
// first ("KLD-ref" and "top1%-ref"), as $DRIFTWOOD_QUALITY_REF says: bf16
// (the default; what a bf16 model's activations are on MLX's GPU), or
// int8/N, int8 in blocks of N values rounded back to float (int8/32 is
// what the int8 kernels compute; other sizes show what a block size would
// give before any kernel is written for it), or int16/N, the same with
// 16-bit integers. The text is
// $DRIFTWOOD_QUALITY_TEXT (default: testdata/quality-text.md.gz, the
// repository's README as it was at 3327a51, kept so that the figures can
// be measured again), the first $DRIFTWOOD_QUALITY_TOKENS tokens (1024).
// With $DRIFTWOOD_QUALITY_DUMP=PREFIX it also writes the tokens to
// PREFIX.ids (int32) and the float path's logits after each to
// PREFIX.logits (float32 rows), little-endian, for bench/llamacpp_kld.c
// to measure llama.cpp's distributions against.
//
//	DRIFTWOOD_QUALITY_MODEL=DIR_OR_GGUF go test -run '^$' -bench Int8Quality -benchtime 1x ./engine/cpu/
func BenchmarkInt8Quality(b *testing.B) {
	sets := int8Sets()
	if len(sets) == 0 {
		b.Skip("this CPU runs no int8 kernel set")
	}
	int8Set := sets[len(sets)-1]
	if ks := envKernels(b); ks.int8() {
		int8Set = *ks // as DRIFTWOOD_KERNELS chose
	}
	var float kernelSet
	for _, ks := range kernelSets {
		if ks.gemvQ4I8 == nil {
			float = ks // the fastest float set
		}
	}
	n := 1024
	if s := os.Getenv("DRIFTWOOD_QUALITY_TOKENS"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil {
			b.Fatal(err)
		}
	}
	m, ids := qualityText(b, os.Getenv("DRIFTWOOD_QUALITY_TEXT"), n)
	defer m.Close()
	open := func(ks kernelSet) (*Backend, engine.Cache) {
		be, err := newBackend(m, Options{}, &ks)
		if err != nil {
			b.Fatal(err)
		}
		c, err := be.NewCache(n + 1)
		if err != nil {
			b.Fatal(err)
		}
		return be, c
	}
	refSet, err := roundedInputs(float, os.Getenv("DRIFTWOOD_QUALITY_REF"))
	if err != nil {
		b.Fatal(err)
	}
	fb, fc := open(float)
	ib, ic := open(int8Set)
	hb, hc := open(refSet)
	defer fb.Close()
	defer ib.Close()
	defer hb.Close()
	vocab := m.Config.VocabSize
	pf, pi, ph := make([]float32, vocab), make([]float32, vocab), make([]float32, vocab)
	var kld, kldH, entropy float64
	agree, agreeH, positions := 0, 0, 0
	dump := qualityDump(b, os.Getenv("DRIFTWOOD_QUALITY_DUMP"), ids)
	for b.Loop() {
		for _, id := range ids {
			if err := fb.Forward(fc, []int32{id}, pf); err != nil {
				b.Fatal(err)
			}
			dump(pf)
			if err := ib.Forward(ic, []int32{id}, pi); err != nil {
				b.Fatal(err)
			}
			if err := hb.Forward(hc, []int32{id}, ph); err != nil {
				b.Fatal(err)
			}
			d, h := klDivergence(pf, pi)
			dh, _ := klDivergence(pf, ph)
			kld += d
			kldH += dh
			entropy += h
			positions++
			top := engine.Argmax(pf)
			if top == engine.Argmax(pi) {
				agree++
			}
			if top == engine.Argmax(ph) {
				agreeH++
			}
		}
	}
	b.ReportMetric(kld/float64(positions), "KLD")
	b.ReportMetric(100*float64(agree)/float64(positions), "top1%")
	b.ReportMetric(kldH/float64(positions), "KLD-ref")
	b.ReportMetric(100*float64(agreeH)/float64(positions), "top1%-ref")
	b.ReportMetric(entropy/float64(positions), "entropy-nats")
}

// qualityDump writes ids to prefix.ids and returns a function that adds
// a row of logits to prefix.logits, closed with the benchmark; with
// prefix "" it writes nothing.
func qualityDump(b *testing.B, prefix string, ids []int32) func([]float32) {
	if prefix == "" {
		return func([]float32) {}
	}
	var buf []byte
	for _, id := range ids {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(id))
	}
	if err := os.WriteFile(prefix+".ids", buf, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Create(prefix + ".logits")
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	b.Cleanup(func() {
		if err := errors.Join(w.Flush(), f.Close()); err != nil {
			b.Error(err)
		}
	})
	return func(logits []float32) {
		if err := binary.Write(w, binary.LittleEndian, logits); err != nil {
			b.Fatal(err)
		}
	}
}

// roundedInputs is ks with its affine gemvs rounding their input as ref
// says (see BenchmarkInt8Quality) and summing the groups of the rounded
// input. The gemvs run on several workers at once, so each call has its
// own copies.
func roundedInputs(ks kernelSet, ref string) (kernelSet, error) {
	block, levels := 0, 0.0 // bf16
	if ref != "" && ref != "bf16" {
		var bits int
		if _, err := fmt.Sscanf(ref, "int%d/%d", &bits, &block); err != nil || block <= 0 || bits != 8 && bits != 16 {
			return ks, fmt.Errorf("DRIFTWOOD_QUALITY_REF=%q: want bf16, int8/N or int16/N", ref)
		}
		levels = float64(int(1)<<(bits-1) - 1)
	}
	// round rounds x, in nibble order (permuteQ4) when q4 says so; the
	// int8 blocks are of the row's natural order.
	round := func(x []float32, group int, q4 bool) ([]float32, []float32) {
		pos := func(k int) int { return k }
		if q4 {
			pos = q4Index
		}
		xr := make([]float32, len(x))
		if block == 0 {
			for i, v := range x {
				u := math.Float32bits(v)
				u += 0x7fff + (u>>16)&1
				xr[i] = math.Float32frombits(u &^ 0xffff)
			}
		}
		for b0 := 0; block > 0 && b0 < len(x); b0 += block {
			var m float64
			for k := b0; k < min(b0+block, len(x)); k++ {
				m = max(m, math.Abs(float64(x[pos(k)])))
			}
			for k := b0; k < min(b0+block, len(x)); k++ {
				if m > 0 {
					xr[pos(k)] = float32(math.RoundToEven(float64(x[pos(k)])*levels/m) * m / levels)
				}
			}
		}
		sums := make([]float32, 0, len(x)/group)
		for g := 0; g < len(xr); g += group {
			var s float32
			for _, v := range xr[g : g+group] {
				s += v
			}
			sums = append(sums, s)
		}
		return xr, sums
	}
	q4, q8 := ks.gemvQ4, ks.gemvQ8
	ks.gemvQ4 = func(out []float32, w []uint32, scales, biases halfVec, x, _ []float32, group int) {
		x, xsum := round(x, group, true)
		q4(out, w, scales, biases, x, xsum, group)
	}
	ks.gemvQ8 = func(out []float32, w []uint32, scales, biases halfVec, x, _ []float32, group int) {
		x, xsum := round(x, group, false)
		q8(out, w, scales, biases, x, xsum, group)
	}
	return ks, nil
}

// qualityText loads the model in $DRIFTWOOD_QUALITY_MODEL (skipping the
// benchmark without one) and the first n tokens of textFile (default:
// testdata/quality-text.md.gz; a .gz file is read decompressed) in its
// tokenizer.
func qualityText(b *testing.B, textFile string, n int) (*engine.Model, []int32) {
	dir := os.Getenv("DRIFTWOOD_QUALITY_MODEL")
	if dir == "" {
		b.Skip("set DRIFTWOOD_QUALITY_MODEL to a model folder or GGUF file")
	}
	return modelText(b, dir, textFile, n)
}

// modelText loads the model at dir and the first n tokens of textFile
// (as qualityText) in its tokenizer.
func modelText(b testing.TB, dir, textFile string, n int) (*engine.Model, []int32) {
	if textFile == "" {
		textFile = "testdata/quality-text.md.gz"
	}
	text, err := readText(textFile)
	if err != nil {
		b.Fatal(err)
	}
	m, err := engine.LoadModel(dir)
	if err != nil {
		b.Fatal(err)
	}
	var tok *tokenizer.Tokenizer
	if m.GGUF != nil {
		tok, err = tokenizer.OpenGGUF(m.GGUF)
	} else {
		tok, err = tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
	}
	if err != nil {
		b.Fatal(err)
	}
	ids := tok.Encode(string(text))
	if len(ids) < n {
		b.Fatalf("%s has %d tokens, fewer than %d", textFile, len(ids), n)
	}
	return m, ids[:n]
}

// klDivergence is KL(softmax(p) ‖ softmax(q)) and the entropy of
// softmax(p), in nats.
func klDivergence(p, q []float32) (kl, entropy float64) {
	lp, lq := logSoftmax(p), logSoftmax(q)
	for i := range lp {
		kl += math.Exp(lp[i]) * (lp[i] - lq[i])
		entropy -= math.Exp(lp[i]) * lp[i]
	}
	return kl, entropy
}

func logSoftmax(x []float32) []float64 {
	m := float64(x[0])
	for _, v := range x {
		m = max(m, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v) - m - math.Log(s)
	}
	return out
}

// readText reads a text file, decompressing one whose name ends in .gz.
func readText(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !strings.HasSuffix(path, ".gz") {
		return io.ReadAll(f)
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(z)
}
