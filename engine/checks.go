package engine

import (
	"fmt"
	"path/filepath"
)

// Checks are the argument checks of the Backend and Cache contract, kept
// here once so that every backend refuses the same calls with the same
// messages. A backend makes one with NewChecks and calls it before it
// touches a cache; what only it can tell (whether a cache is its own,
// whether it is closed) it checks itself.
type Checks struct {
	name   string  // the backend's Name, the prefix of every message
	cfg    *Config // the model's shape
	config string  // the model's config.json, named when a token id is out of range
}

// NewChecks returns the checks for a backend called name running m.
func NewChecks(name string, m *Model) Checks {
	return Checks{name: name, cfg: m.Config, config: filepath.Join(m.Dir, "config.json")}
}

// Window checks the window of a new cache (Config.CheckWindow).
func (k *Checks) Window(window int) error {
	return k.cfg.CheckWindow(window)
}

// Forward checks the arguments of Backend.Forward: the logits buffer holds
// the vocabulary (the last token's logits) or len(tokens) times it (every
// token's, for more than one token), the tokens fit in the cache's window,
// and every token id is in the vocabulary. all reports whether every
// token's logits are wanted. It allocates nothing unless it fails.
//
// # Errors
//
// *ContextFullError when the tokens do not fit; an error naming the
// buffer's size or the token and config.json otherwise.
func (k *Checks) Forward(c Cache, tokens []int32, logits []float32) (all bool, err error) {
	vocab := k.cfg.VocabSize
	all = len(logits) == len(tokens)*vocab && len(tokens) > 1
	if !all && len(logits) != vocab {
		return false, fmt.Errorf("%s: logits buffer holds %d floats, want %d or %d", k.name, len(logits), vocab, len(tokens)*vocab)
	}
	return all, k.Tokens(c, tokens)
}

// Tokens checks the tokens of a forward pass that writes no logits
// (DeviceSampler.ForwardKeep): they fit in c's window and are in the
// vocabulary.
func (k *Checks) Tokens(c Cache, tokens []int32) error {
	if c.Len()+len(tokens) > c.Window() {
		return &ContextFullError{Window: c.Window(), Have: c.Len(), Adding: len(tokens)}
	}
	for _, t := range tokens {
		if t < 0 || int(t) >= k.cfg.VocabSize {
			return fmt.Errorf("%s: token id %d is outside the vocabulary of %d (vocab_size in %s)", k.name, t, k.cfg.VocabSize, k.config)
		}
	}
	return nil
}

// Import checks a KV state before c imports it: it must fit the model and
// c's window (ValidateKV), which also keeps to the dtypes every backend
// reads.
func (k *Checks) Import(c Cache, s *KVState) error {
	if err := k.cfg.ValidateKV(s, c.Window()); err != nil {
		return fmt.Errorf("%s cache: %w", k.name, err)
	}
	return nil
}
