package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/cpu"
)

// benchResult is what `driftwood bench` measures.
type benchResult struct {
	Model   string `json:"model"`
	Backend string `json:"backend"`
	Kernels string `json:"kernels,omitempty"`
	// Activations is the CPU backend's: float, int8 or int8x2.
	Activations string `json:"activations,omitempty"`
	// Threads is the CPU backend's workers (what --threads 0 chose), else
	// --threads.
	Threads int `json:"threads"`
	// Batch is how many prompt tokens the CPU backend takes together.
	Batch int `json:"batch,omitempty"`
	// PrefetchAhead is how many bytes ahead the CPU backend's int8 decode
	// kernels prefetch, PrefetchSource where that came from (cpu.Ahead*).
	PrefetchAhead  int    `json:"prefetch_ahead,omitempty"`
	PrefetchSource string `json:"prefetch_source,omitempty"`
	// Tuning is what the CPU backend derived from this CPU.
	Tuning *cpu.Tuning `json:"tuning,omitempty"`
	// KVType is the KV cache's element type, KVBytesPerToken what one
	// position of it takes.
	KVType          string  `json:"kv_type,omitempty"`
	KVBytesPerToken int     `json:"kv_bytes_per_token,omitempty"`
	LoadSeconds     float64 `json:"load_s"`
	PromptTokens    int     `json:"prompt_tokens"`
	GenTokens       int     `json:"gen_tokens"`
	Runs            int     `json:"runs"`
	PrefillTPS      float64 `json:"prefill_tok_per_s"`
	DecodeTPS       float64 `json:"decode_tok_per_s"`
	PeakRSSMiB      float64 `json:"peak_rss_mib,omitempty"`
	// With --controller: the median first-step wait (start-up) and the
	// median wait per later token, in milliseconds.
	ControllerFirstMillis    float64 `json:"controller_first_ms,omitempty"`
	ControllerPerTokenMillis float64 `json:"controller_per_token_ms,omitempty"`
	// Restore is filled by --restore-tokens instead of the speeds.
	Restore []restoreResult `json:"restore,omitempty"`
	// TTFT is filled by --ttft instead of the speeds.
	TTFT *ttftResult `json:"ttft,omitempty"`
}

func cmdBench(ctx context.Context, args []string, out, errOut io.Writer) error {
	g := newGenFlags("bench", errOut)
	promptN := g.fs.Int("prompt-tokens", 512, "prompt length for the prefill measurement")
	genN := g.fs.Int("gen-tokens", 64, "tokens to decode for the decode measurement")
	runs := g.fs.Int("runs", 3, "repetitions; the median is reported")
	asJSON := g.fs.Bool("json", false, "print the result as JSON")
	var cf controllerFlags
	cf.register(g.fs)
	restoreN := g.fs.String("restore-tokens", "", "instead: compare restoring a session of these many tokens (comma-separated) with re-processing them")
	ttft := g.fs.String("ttft", "", "instead: time to first token of a new chat with this message, from opening the model, without and with the prefix cache")
	if err := g.parse(args); err != nil {
		return err
	}
	if err := g.needModel(); err != nil {
		return err
	}
	if *promptN < 1 || *genN < 1 || *runs < 1 {
		return fmt.Errorf("--prompt-tokens, --gen-tokens and --runs must be at least 1")
	}
	if *ttft != "" {
		r, err := benchTTFT(ctx, g, *ttft, *runs, errOut)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(out).Encode(benchResult{Model: g.model, Threads: g.threads, Runs: *runs, TTFT: &r})
		}
		_, err = fmt.Fprintf(out, "%s: time to first token of a new chat (%q, %d prompt tokens), median of %d\nwithout the prefix cache  %.3f s\nfrom the prefix cache     %.3f s  (%d tokens restored; %.3f s after the model was open)\n",
			g.model, r.Prompt, r.PromptTokens, r.Runs, r.ColdSeconds, r.WarmSeconds, r.PrefixTokens, r.WarmChatSeconds)
		return err
	}
	l, err := chatopen.Open(ctx, g.model, g.openOptions(errOut))
	if err != nil {
		return err
	}
	defer l.Close()
	c := l.Weights.Config
	// Random ordinary tokens (no specials), the same every run.
	rng := rand.New(rand.NewPCG(1, 2))
	ordinary := c.VocabSize
	if c.BOSTokenID != nil && int(*c.BOSTokenID) < ordinary {
		ordinary = int(*c.BOSTokenID)
	}
	prompt := make([]int32, *promptN)
	for i := range prompt {
		prompt[i] = int32(rng.IntN(ordinary))
	}
	if *restoreN != "" {
		sizes, err := parseIDs(*restoreN, 1<<30)
		if err != nil {
			return fmt.Errorf("--restore-tokens: %w", err)
		}
		res := benchResult{Model: g.model, Backend: l.Backend.Name(), Threads: g.threads, LoadSeconds: l.LoadTime.Seconds()}
		res.KVType, res.KVBytesPerToken = kvTypeOf(l)
		for _, n := range sizes {
			long := make([]int32, n)
			for i := range long {
				long[i] = int32(rng.IntN(ordinary))
			}
			r, err := benchRestore(ctx, l, long, errOut)
			if err != nil {
				return err
			}
			res.Restore = append(res.Restore, r)
		}
		res.PeakRSSMiB = peakRSSMiB()
		return json.NewEncoder(out).Encode(res)
	}
	window := *promptN + *genN
	if max := c.MaxPositionEmbeddings; max > 0 && window > max {
		return fmt.Errorf("--prompt-tokens + --gen-tokens = %d exceeds the model's %d positions", window, max)
	}
	greedy := engine.SamplerConfig{TopP: 1, RepeatPenalty: 1}
	var hook engine.Hook
	if cf.name != "" {
		cs, err := newControllerSet(l, cf.dir, errOut)
		if err != nil {
			return err
		}
		defer cs.Close()
		if err := cs.use(cf.name, cf.arg); err != nil {
			return err
		}
		hook = cs.Host
	}
	if cb, ok := l.Backend.(*cpu.Backend); ok {
		if err := settlePrefetch(cb, c.VocabSize, ordinary, c.Window(64), errOut); err != nil {
			return err
		}
	}
	var prefill, decode, first, wait []float64
	for r := 0; r < *runs; r++ {
		cache, err := l.Backend.NewCache(window)
		if err != nil {
			return err
		}
		gen := l.Generator(greedy, *genN)
		gen.StopTokens, gen.Hook = nil, hook // decode all *genN tokens
		seq := &engine.Sequence{Cache: cache}
		start := time.Now()
		if err := gen.Prefill(ctx, seq, prompt); err != nil {
			cache.Close()
			return err
		}
		prefill = append(prefill, float64(len(prompt))/time.Since(start).Seconds())
		// Decode from a one-token prompt on top of the prefilled cache.
		st, err := gen.Generate(ctx, seq, prompt[:1], func(engine.Event) error { return nil })
		cache.Close() // the next run's cache must not share the memory
		if err != nil {
			return err
		}
		decode = append(decode, st.GenRate())
		first = append(first, ms(st.HookFirst))
		wait = append(wait, ms(st.HookWait)/float64(max(st.GenTokens-1, 1)))
		fmt.Fprintf(errOut, "run %d/%d: prefill %.1f tok/s, decode %.1f tok/s\n", r+1, *runs, prefill[r], decode[r])
	}
	res := benchResult{
		Model: g.model, Backend: l.Backend.Name(), Threads: g.threads, LoadSeconds: l.LoadTime.Seconds(),
		PromptTokens: *promptN, GenTokens: *genN, Runs: *runs,
		PrefillTPS: median(prefill), DecodeTPS: median(decode), PeakRSSMiB: peakRSSMiB(),
	}
	if cb, ok := l.Backend.(*cpu.Backend); ok {
		t := cpu.DetectTuning()
		res.Kernels, res.Activations, res.Threads, res.Batch, res.Tuning = cb.Kernels(), cb.Activations(), cb.Threads(), cb.MaxBatch(), &t
		res.PrefetchAhead, res.PrefetchSource = cb.Prefetch()
	}
	res.KVType, res.KVBytesPerToken = kvTypeOf(l)
	if hook != nil {
		res.ControllerFirstMillis, res.ControllerPerTokenMillis = median(first), median(wait)
	}
	if *asJSON {
		return json.NewEncoder(out).Encode(res)
	}
	backend := res.Backend
	if res.Kernels != "" {
		backend += " " + res.Kernels
	}
	if res.Activations == cpu.ActivationsInt8x2 { // not the default: say so beside the speeds it costs
		backend += " " + res.Activations
	}
	if res.PrefetchSource != "" && res.PrefetchSource != cpu.AheadDefault { // a distance the decode depends on
		backend += fmt.Sprintf(", prefetch %s ahead, %s", kibibytes(res.PrefetchAhead), res.PrefetchSource)
	}
	_, err = fmt.Fprintf(out, "%s (%s, %s)\nload     %.2f s\nprefill  %.1f tok/s  (%d tokens, median of %d)\ndecode   %.1f tok/s  (%d tokens after %d, median of %d)\nkv cache %s, %s per token\npeak RSS %.0f MiB\n",
		g.model, c.Describe(), backend, res.LoadSeconds, res.PrefillTPS, *promptN, *runs, res.DecodeTPS, *genN, *promptN, *runs,
		res.KVType, kibibytes(res.KVBytesPerToken), res.PeakRSSMiB)
	if err == nil && hook != nil {
		step := 1000 / res.DecodeTPS
		_, err = fmt.Fprintf(out, "controller %s: start-up %.1f ms (first step), then %.3f ms waited per token (%.2f %% of a %.1f ms step)\n",
			cf.name, res.ControllerFirstMillis, res.ControllerPerTokenMillis, 100*res.ControllerPerTokenMillis/step, step)
	}
	return err
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// peakRSSMiB reads the process's peak resident set size on Linux (VmHWM);
// elsewhere it returns 0.
func peakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// kvTypeOf is the loaded backend's KV cache type and the bytes one
// position of it takes on the model.
func kvTypeOf(l *chatopen.Loaded) (string, int) {
	t := engine.KVTypeOf(l.Backend)
	c := l.Weights.Config
	return string(t), t.BytesPerToken(c.NumHiddenLayers, c.NumKeyValueHeads*c.HeadDim)
}

// kibibytes writes n bytes in KiB, or bytes below one.
func kibibytes(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.4g KiB", float64(n)/1024)
}

// settlePrefetch runs the decode steps that b measures its prefetch
// distance on (cpu.AheadMeasuring) before the timed runs, so that they
// time the distance chosen rather than the measurement; the tokens are
// ids below ordinary, the logits vocab wide, the cache window positions
// long (emptied when full: a model of a short context still settles).
func settlePrefetch(b *cpu.Backend, vocab, ordinary, window int, errOut io.Writer) error {
	if _, src := b.Prefetch(); src != cpu.AheadMeasuring {
		return nil
	}
	fmt.Fprintln(errOut, "measuring the prefetch distance on the first decode steps…")
	cache, err := b.NewCache(window)
	if err != nil {
		return err
	}
	defer cache.Close()
	logits := make([]float32, vocab)
	for i := 0; i < settleSteps; i++ {
		if _, src := b.Prefetch(); src != cpu.AheadMeasuring {
			break
		}
		if cache.Len() == window {
			cache.Truncate(0)
		}
		if err := b.Forward(cache, []int32{int32(i % ordinary)}, logits); err != nil {
			return err
		}
	}
	ahead, src := b.Prefetch()
	fmt.Fprintf(errOut, "prefetch: %d KiB ahead (%s)\n", ahead>>10, src)
	return nil
}

// settleSteps bounds settlePrefetch's steps: more than a measurement takes.
const settleSteps = 256
