package cpu

import (
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
)

// BenchmarkContextShift weighs the two ways to keep a conversation going
// past its window, on the model in $DRIFTWOOD_QUALITY_MODEL and the
// tokens of testdata/quality-text.md.gz: a head of 32 tokens (the system
// prompt) and a gap of 480 (the turns that leave the view) are followed
// by 480 kept tokens and a probe of 64 (the next message). Re-prefill
// runs head+kept+probe through a fresh cache, the exact answer; shift
// moves the kept tokens' keys and values down over the gap
// (engine.Config.ShiftKV) and runs only the probe. It reports the time
// each takes to make room (ms), and how far the shifted probe's
// next-token distributions are from the re-prefilled ones (mean KLD,
// top-1 agreement), beside the same figures for dropping the kept tokens
// too (head+probe only), which says how much the kept context matters.
//
//	DRIFTWOOD_QUALITY_MODEL=DIR go test -run '^$' -bench ContextShift -benchtime 3x ./engine/cpu/
func BenchmarkContextShift(b *testing.B) {
	const headN, gapN, keptN, probeN = 32, 480, 480, 64
	m, ids := qualityText(b, "", headN+gapN+keptN+probeN)
	defer m.Close()
	head, gap := ids[:headN], ids[headN:headN+gapN]
	kept, probe := ids[headN+gapN:headN+gapN+keptN], ids[headN+gapN+keptN:]
	be, err := New(m, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	vocab := m.Config.VocabSize
	window := headN + gapN + keptN + probeN
	// run feeds parts through a new cache and returns it with the logits
	// of the last part's every token.
	run := func(parts ...[]int32) (engine.Cache, []float32) {
		c, err := be.NewCache(window)
		if err != nil {
			b.Fatal(err)
		}
		var logits []float32
		for _, p := range parts {
			logits = make([]float32, len(p)*vocab)
			if err := be.Forward(c, p, logits); err != nil {
				b.Fatal(err)
			}
		}
		return c, logits
	}
	// compare is the mean KLD of q's rows from p's and their top-1
	// agreement in percent.
	compare := func(p, q []float32) (kld, top1 float64) {
		for i := range probeN {
			pr, qr := p[i*vocab:(i+1)*vocab], q[i*vocab:(i+1)*vocab]
			d, _ := klDivergence(pr, qr)
			kld += d
			if engine.Argmax(pr) == engine.Argmax(qr) {
				top1++
			}
		}
		return kld / probeN, 100 * top1 / probeN
	}
	var shiftTime, prefillTime time.Duration
	var kld, top1, bareKLD, bareTop1 float64
	for b.Loop() {
		full, _ := run(head, gap, kept)
		t0 := time.Now()
		kv, err := full.Export()
		if err == nil {
			kv, err = m.Config.ShiftKV(kv, headN, gapN, keptN)
		}
		if err == nil {
			err = full.Import(kv)
		}
		if err != nil {
			b.Fatal(err)
		}
		shiftTime += time.Since(t0)
		shifted := make([]float32, probeN*vocab)
		if err := be.Forward(full, probe, shifted); err != nil {
			b.Fatal(err)
		}
		t0 = time.Now()
		_, _ = run(append(head[:headN:headN], kept...))
		prefillTime += time.Since(t0)
		_, exact := run(append(head[:headN:headN], kept...), probe)
		_, bare := run(head, probe)
		kld, top1 = compare(exact, shifted)
		bareKLD, bareTop1 = compare(exact, bare)
	}
	b.ReportMetric(float64(shiftTime.Milliseconds())/float64(b.N), "shift-ms")
	b.ReportMetric(float64(prefillTime.Milliseconds())/float64(b.N), "reprefill-ms")
	b.ReportMetric(kld, "shift-KLD")
	b.ReportMetric(top1, "shift-top1%")
	b.ReportMetric(bareKLD, "dropall-KLD")
	b.ReportMetric(bareTop1, "dropall-top1%")
}
