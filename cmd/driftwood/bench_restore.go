package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// restoreResult compares restoring a session with processing its tokens
// again.
type restoreResult struct {
	Tokens        int     `json:"tokens"`
	PrefillMillis float64 `json:"prefill_ms"`
	SaveMillis    float64 `json:"save_ms"`
	RestoreMillis float64 `json:"restore_ms"`
	// RestoreAgainMillis is a second restore into the same cache, whose
	// memory is then already the process's (no first-touch faults).
	RestoreAgainMillis float64 `json:"restore_again_ms"`
	// ReadMillis is reading the file from the page cache through a 1 MiB
	// buffer, as cat does: what a restore is measured against.
	ReadMillis float64 `json:"read_ms"`
	Speedup    float64 `json:"speedup"`
	SizeBytes  int64   `json:"size_bytes"`
}

// benchRestore prefills n tokens (what resuming without a snapshot
// costs), saves them as a session, and restores the session into a fresh
// cache the way `run --session` does (open, validate, check against the
// model, import).
func benchRestore(ctx context.Context, l *chatopen.Loaded, prompt []int32, errOut io.Writer) (restoreResult, error) {
	r := restoreResult{Tokens: len(prompt)}
	n := len(prompt)
	cache, err := l.Backend.NewCache(n)
	if err != nil {
		return r, err
	}
	defer cache.Close()
	gen := l.Generator(engine.SamplerConfig{TopP: 1, RepeatPenalty: 1}, 0)
	seq := &engine.Sequence{Cache: cache}
	start := time.Now()
	if err := gen.Prefill(ctx, seq, prompt); err != nil {
		return r, err
	}
	r.PrefillMillis = ms(time.Since(start))
	dir, err := os.MkdirTemp("", "driftwood-bench-")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bench.safetensors")
	start = time.Now()
	kv, err := cache.Export()
	if err != nil {
		return r, err
	}
	meta := sessions.Meta{Model: l.Describe(), ModelFingerprint: l.Weights.Fingerprint, Tokens: seq.Tokens, Created: start, Updated: start}
	if l.Tok != nil {
		meta.TokenizerFingerprint = l.Tok.Fingerprint()
	}
	if err := sessions.Save(path, meta, kv); err != nil {
		return r, err
	}
	r.SaveMillis = ms(time.Since(start))
	if st, err := os.Stat(path); err == nil {
		r.SizeBytes = st.Size()
	}
	fresh, err := l.Backend.NewCache(n)
	if err != nil {
		return r, err
	}
	defer fresh.Close()
	if r.ReadMillis, err = readTime(path); err != nil {
		return r, err
	}
	restore := func() (float64, error) {
		start := time.Now()
		snap, err := sessions.Open(path)
		if err != nil {
			return 0, err
		}
		err = snap.CheckModel(l.Weights, meta.TokenizerFingerprint, n)
		if err == nil {
			err = fresh.Import(snap.KV)
		}
		snap.Close()
		return ms(time.Since(start)), err
	}
	if r.RestoreMillis, err = restore(); err != nil {
		return r, err
	}
	if r.RestoreAgainMillis, err = restore(); err != nil {
		return r, err
	}
	r.Speedup = r.PrefillMillis / r.RestoreMillis
	gbps := func(millis float64) float64 { return float64(r.SizeBytes) / millis / 1e6 }
	fmt.Fprintf(errOut, "%d tokens: re-prefill %.1f ms, save %.1f ms, restore %.2f ms (%.0f×, %.2f GB/s; again into the same cache %.2f ms, %.2f GB/s), snapshot %.1f MB read from the page cache in %.2f ms (%.2f GB/s)\n",
		n, r.PrefillMillis, r.SaveMillis, r.RestoreMillis, r.Speedup, gbps(r.RestoreMillis), r.RestoreAgainMillis, gbps(r.RestoreAgainMillis),
		float64(r.SizeBytes)/1e6, r.ReadMillis, gbps(r.ReadMillis))
	return r, nil
}

// readTime is how long reading the file at path through a 1 MiB buffer
// takes, the best of three (the first brings it into the page cache if
// it is not).
func readTime(path string) (float64, error) {
	buf := make([]byte, 1<<20)
	best := 0.0
	for i := range 3 {
		f, err := os.Open(path)
		if err != nil {
			return 0, err
		}
		start := time.Now()
		_, err = io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
		d := ms(time.Since(start))
		f.Close()
		if err != nil {
			return 0, err
		}
		if i == 0 || d < best {
			best = d
		}
	}
	return best, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
