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
	Speedup       float64 `json:"speedup"`
	SizeBytes     int64   `json:"size_bytes"`
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
	start = time.Now()
	snap, err := sessions.Open(path)
	if err != nil {
		return r, err
	}
	err = snap.CheckModel(l.Weights, meta.TokenizerFingerprint, n)
	if err == nil {
		err = fresh.Import(snap.KV)
	}
	snap.Close()
	r.RestoreMillis = ms(time.Since(start))
	if err != nil {
		return r, err
	}
	r.Speedup = r.PrefillMillis / r.RestoreMillis
	fmt.Fprintf(errOut, "%d tokens: re-prefill %.1f ms, save %.1f ms, restore %.2f ms (%.0f×), snapshot %.1f MB\n",
		n, r.PrefillMillis, r.SaveMillis, r.RestoreMillis, r.Speedup, float64(r.SizeBytes)/1e6)
	return r, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
