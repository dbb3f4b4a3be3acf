package engine

import (
	"fmt"

	"github.com/driftwoodlabs/driftwood/internal/sysmem"
)

// CheckWindow checks a context window before a backend makes a cache for
// it: at least one position, at most max_position_embeddings, and a KV
// cache that, filled, fits in the machine's physical memory. Caches grow
// as they fill, so this refuses only windows that could never be used
// whole, such as the 2^62 positions of a hostile config.json. Window
// turns a requested size (0: the model's longest) into one to check.
func (c *Config) CheckWindow(window int) error {
	return c.checkWindow(window, sysmem.Total())
}

// Window is the context window for a requested size: the model's longest
// (max_position_embeddings) for 0 or anything larger, else the request.
func (c *Config) Window(requested int) int {
	if max := c.MaxPositionEmbeddings; max > 0 && (requested <= 0 || requested > max) {
		return max
	}
	return requested
}

// checkWindow is CheckWindow on a machine with memory bytes (0: unknown).
func (c *Config) checkWindow(window int, memory uint64) error {
	if max := c.MaxPositionEmbeddings; window <= 0 || (max > 0 && window > max) {
		return fmt.Errorf("context window %d: must be in [1, %d] for this model", window, max)
	}
	per := c.KVBytesPerPosition()
	if memory > 0 && per > 0 && uint64(window) > memory/per {
		return fmt.Errorf("context window %d: its KV cache would take %s (%s per position), more than this machine's %s of memory; choose a smaller context size",
			window, gib(float64(window)*float64(per)), kib(per), gib(float64(memory)))
	}
	return nil
}

// KVBytesPerPosition is what one position of the KV cache holds: a key
// and a value of kv_heads × head_dim float32s for every layer (the
// backends keep the cache in float32).
func (c *Config) KVBytesPerPosition() uint64 {
	return 2 * 4 * uint64(max(c.NumHiddenLayers, 0)) * uint64(max(c.NumKeyValueHeads, 0)) * uint64(max(c.HeadDim, 0))
}

func gib(n float64) string { return fmt.Sprintf("%.1f GiB", n/(1<<30)) }

func kib(n uint64) string { return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10)) }
