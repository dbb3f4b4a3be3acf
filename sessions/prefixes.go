package sessions

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/cachedir"
	"github.com/driftwoodlabs/driftwood/internal/xdg"
)

// Prefixes caches the KV state of conversations' shared starts (the
// system prompt and the template's headers, chat.Template.SharedPrefix),
// so that a new chat prefills only what follows them. Each entry is a
// snapshot file named by a hash of the model's and the tokenizer's
// fingerprints and the exact token ids, and is checked as a session is
// before it is used; the folder is kept under Limit bytes, the least
// recently used entries leaving first. A changed system prompt, model or
// date (in templates that print it) is another key, so a stale entry is
// never found, only aged out.
type Prefixes struct {
	Dir   string
	Limit int64
}

// MinPrefix is the shortest prefix worth an entry.
const MinPrefix = 8

// DefaultPrefixes is the cache in $XDG_CACHE_HOME/driftwood/prefixes,
// 256 MiB at most.
func DefaultPrefixes() *Prefixes {
	return &Prefixes{Dir: xdg.Cache("prefixes"), Limit: 256 << 20}
}

// path is prefix's entry for model m and tokenizer fingerprint tok.
func (p *Prefixes) path(m *engine.Model, tok string, prefix []int32) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", m.Fingerprint, tok)
	binary.Write(h, binary.LittleEndian, prefix)
	return filepath.Join(p.Dir, hex.EncodeToString(h.Sum(nil)[:16])+".safetensors")
}

// Restore fills seq, whose cache must be empty, with prefix's cached
// state when ids begin with prefix (and go on past it) and the entry
// passes every check a session's does, plus holding exactly prefix. It
// returns the positions restored: 0 for a miss. An entry that fails a
// check is removed and the error returned, still a miss: seq is as it was.
func (p *Prefixes) Restore(seq *engine.Sequence, m *engine.Model, tok string, prefix, ids []int32) (int, error) {
	if len(prefix) < MinPrefix || len(ids) <= len(prefix) || !slices.Equal(ids[:len(prefix)], prefix) || seq.Cache.Len() != 0 {
		return 0, nil
	}
	path := p.path(m, tok, prefix)
	snap, err := Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err == nil {
		defer snap.Close()
		err = snap.CheckModel(m, tok, seq.Cache.Window())
		if err == nil && !slices.Equal(snap.Meta.Tokens, prefix) {
			err = fmt.Errorf("prefix cache entry %s holds other tokens than its name says", path)
		}
		if err == nil {
			err = seq.Cache.Import(snap.KV)
		}
	}
	if err != nil {
		seq.Cache.Truncate(0) // it was empty
		os.Remove(path)
		return 0, fmt.Errorf("prefix cache: %w (entry removed)", err)
	}
	seq.Tokens = append(seq.Tokens[:0], prefix...)
	now := time.Now()
	os.Chtimes(path, now, now) // most recently used
	return len(prefix), nil
}

// Keep saves seq's first len(prefix) positions as prefix's entry, unless
// the entry exists or seq does not hold prefix, then trims the folder to
// Limit.
func (p *Prefixes) Keep(seq *engine.Sequence, m *engine.Model, tok string, prefix []int32) error {
	if len(prefix) < MinPrefix || len(seq.Tokens) < len(prefix) || !slices.Equal(seq.Tokens[:len(prefix)], prefix) {
		return nil
	}
	path := p.path(m, tok, prefix)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	kv, err := seq.Cache.Export()
	if err != nil {
		return fmt.Errorf("prefix cache: %w", err)
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return fmt.Errorf("prefix cache: %w", err)
	}
	now := time.Now().UTC()
	meta := Meta{Created: now, Updated: now, Model: m.Config.Describe(), ModelFingerprint: m.Fingerprint, TokenizerFingerprint: tok, Tokens: slices.Clone(prefix)}
	// Two processes may write the same entry at once: each writes its own
	// temporary file and the last rename wins, both whole.
	if err := write(path, meta, kv.Head(len(prefix)), nil); err != nil {
		return fmt.Errorf("prefix cache: %w", err)
	}
	cachedir.Trim(p.Dir, ".safetensors", 0, p.Limit)
	return nil
}
