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
// the layout of mlx-lm's KVCache without its batch dimension; or, when
// Quant is set, quantised as mlx-lm's QuantizedKVCache.
type KVState struct {
	Len, KVHeads, HeadDim int
	DType                 safetensors.DType
	K, V                  [][]byte // one entry per layer
	Quant                 *KVQuant
	// Hold, when set, says that K and V lie in a private copy-on-write
	// mapping (a session file's): a cache of the state's type may use
	// them in place, and write over them, rather than copy them. Hold
	// keeps the mapping until the release it returns is first called
	// (later calls do nothing); a nil release means the mapping is gone
	// (copy instead).
	Hold func() (release func() error)
}

// KVQuant describes a quantised KVState in mlx-lm's affine form: each
// group of Group values along head_dim is scale·q + bias, q an unsigned
// Bits-bit code. K and V (DType U32) hold the codes packed little-endian
// into uint32 words, (kv_heads, len, head_dim·Bits/32); the scales and
// biases are (kv_heads, len, head_dim/Group) in ScaleDType. A q8_0 cache's
// blocks are exactly this with Group 32, Bits 8 and bias −128·scale.
type KVQuant struct {
	Group, Bits                        int
	ScaleDType                         safetensors.DType
	KScales, KBiases, VScales, VBiases [][]byte // one entry per layer
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
	case s.Quant == nil && s.DType != safetensors.F32 && s.DType != safetensors.F16 && s.DType != safetensors.BF16:
		return fmt.Errorf("KV state has dtype %s; F32, F16 and BF16 are read", s.DType)
	}
	want := s.KVHeads * s.Len * s.HeadDim * s.DType.Size()
	if q := s.Quant; q != nil {
		if err := q.validate(s); err != nil {
			return err
		}
		want = s.KVHeads * s.Len * s.HeadDim * q.Bits / 8
	}
	for i := range s.K {
		if len(s.K[i]) != want || len(s.V[i]) != want {
			return fmt.Errorf("KV state layer %d: %d/%d bytes, want %d", i, len(s.K[i]), len(s.V[i]), want)
		}
	}
	return nil
}

// validate checks a quantised state's parameters and the sizes of its
// scales and biases.
func (q *KVQuant) validate(s *KVState) error {
	switch {
	case s.DType != safetensors.U32:
		return fmt.Errorf("quantised KV state has dtype %s, want U32", s.DType)
	case q.Bits != 4 && q.Bits != 8:
		return fmt.Errorf("quantised KV state has %d-bit codes; 4 and 8 are read", q.Bits)
	case q.Group != 32 && q.Group != 64 && q.Group != 128 || s.HeadDim%q.Group != 0:
		return fmt.Errorf("quantised KV state has groups of %d; 32, 64 or 128 dividing head_dim %d are read", q.Group, s.HeadDim)
	case q.ScaleDType != safetensors.F32 && q.ScaleDType != safetensors.F16 && q.ScaleDType != safetensors.BF16:
		return fmt.Errorf("quantised KV state has %s scales; F32, F16 or BF16 are read", q.ScaleDType)
	}
	want := s.KVHeads * s.Len * s.HeadDim / q.Group * q.ScaleDType.Size()
	for i, t := range [][][]byte{q.KScales, q.KBiases, q.VScales, q.VBiases} {
		if len(t) != len(s.K) {
			return fmt.Errorf("quantised KV state has %d layers of %s, want %d", len(t), quantPart[i], len(s.K))
		}
		for l := range t {
			if len(t[l]) != want {
				return fmt.Errorf("quantised KV state layer %d: %d bytes of %s, want %d", l, len(t[l]), quantPart[i], want)
			}
		}
	}
	return nil
}

var quantPart = [...]string{"key scales", "key biases", "value scales", "value biases"}

// ContextFullError says a sequence would outgrow its context window.
type ContextFullError struct {
	Window, Have, Adding int
}

func (e *ContextFullError) Error() string {
	return fmt.Sprintf("context window full: %d tokens held + %d new > window of %d", e.Have, e.Adding, e.Window)
}
