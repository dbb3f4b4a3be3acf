// Package engine loads Llama-family model folders and runs the decode loop:
// configuration, memory-mapped weights in their stored form, the Backend
// interface that computes logits, the sampler, and generation with a
// per-step hook through which a controller restricts what comes next.
//
// engine knows nothing above it (TUI, controllers, sessions); backends
// (engine/cpu, mlxbridge) implement its interfaces and call Checks, the
// argument checks the contract shares.
package engine

import (
	"fmt"

	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// Backend computes a model's forward pass. Implementations: engine/cpu
// (pure Go, the reference) and mlxbridge (MLX).
type Backend interface {
	// Name is a short label such as "cpu" or "mlx".
	Name() string
	// NewCache returns an empty KV cache for one sequence, holding at most
	// window positions.
	NewCache(window int) (Cache, error)
	// Forward runs tokens through the model at positions cache.Len(),
	// cache.Len()+1, ..., appends their keys and values to cache, and writes
	// logits: those of the last token when len(logits) is the vocabulary
	// size, those of every token (row-major) when it is len(tokens) times
	// that. A prompt is processed as a batch (matrix-matrix), not token by
	// token.
	//
	// # Errors
	//
	// *ContextFullError when the tokens do not fit in the cache's window; the
	// cache is then unchanged.
	Forward(cache Cache, tokens []int32, logits []float32) error
	// Close releases the backend's resources; the model stays open.
	Close() error
}

// Cache is the keys and values of one sequence's processed positions.
type Cache interface {
	// Len is the number of positions held.
	Len() int
	// Window is the most positions the cache may hold.
	Window() int
	// Truncate drops every position from n on (taking tokens back,
	// regenerating a reply). n must be in [0, Len()].
	Truncate(n int)
	// Export copies out the used positions.
	Export() (*KVState, error)
	// Import replaces the cache's contents with s, which the caller has
	// checked against the model (ValidateKV).
	Import(s *KVState) error
	// Close frees the cache's memory (device memory, for a GPU backend);
	// using the cache afterwards panics, and calling Close again does
	// nothing. A cache dropped without Close is freed after garbage
	// collection, but that is a safety net: device memory is not seen by
	// Go's collector, so it may be held long after the cache is dropped.
	Close() error
}

// KVState is a cache's used positions as plain tensors, for sessions: per
// layer, K and V of shape (kv_heads, len, head_dim) in DType, little-endian,
// the layout of mlx-lm's KVCache without its batch dimension.
type KVState struct {
	Len, KVHeads, HeadDim int
	DType                 safetensors.DType
	K, V                  [][]byte // one entry per layer
}

// ValidateKV checks s against the model's shape before a cache imports it.
func (c *Config) ValidateKV(s *KVState, window int) error {
	switch {
	case s.KVHeads != c.NumKeyValueHeads || s.HeadDim != c.HeadDim:
		return fmt.Errorf("KV state has %d kv heads of %d, the model %d of %d", s.KVHeads, s.HeadDim, c.NumKeyValueHeads, c.HeadDim)
	case len(s.K) != c.NumHiddenLayers || len(s.V) != c.NumHiddenLayers:
		return fmt.Errorf("KV state has %d/%d layers, the model %d", len(s.K), len(s.V), c.NumHiddenLayers)
	case s.Len < 0 || s.Len > window:
		return fmt.Errorf("KV state holds %d positions, the context window is %d", s.Len, window)
	case s.DType.Size() == 0:
		return fmt.Errorf("KV state has unsupported dtype %q", s.DType)
	}
	want := s.KVHeads * s.Len * s.HeadDim * s.DType.Size()
	for i := range s.K {
		if len(s.K[i]) != want || len(s.V[i]) != want {
			return fmt.Errorf("KV state layer %d: %d/%d bytes, want %d", i, len(s.K[i]), len(s.V[i]), want)
		}
	}
	return nil
}

// ContextFullError says a sequence would outgrow its context window.
type ContextFullError struct {
	Window, Have, Adding int
}

func (e *ContextFullError) Error() string {
	return fmt.Sprintf("context window full: %d tokens held + %d new > window of %d", e.Have, e.Adding, e.Window)
}
