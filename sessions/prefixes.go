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
	"sync/atomic"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/internal/cachedir"
	"github.com/driftwoodlabs/driftwood/internal/privatefile"
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
//
// The cache trusts what the compile cache trusts (internal/privatefile):
// a folder of the user's, made 0700 (a folder of another user's is not
// used), entries that are regular files of the user's that no one else
// may write, mapped from the descriptor checked, and that hold exactly
// the model fingerprint, tokenizer fingerprint and token ids their name
// hashes. Any other entry is removed, and Restore's error says so.
type Prefixes struct {
	Dir   string
	Limit int64
	// told is set once a folder that cannot be used has been reported.
	told atomic.Bool
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

// ready makes the folder private (privatefile.Dir) or says why it
// cannot be used: the first time only, so that a chat does not repeat it
// at every message.
func (p *Prefixes) ready() (bool, error) {
	err := privatefile.Dir(p.Dir)
	if err == nil {
		return true, nil
	}
	if p.told.Swap(true) {
		return false, nil
	}
	return false, fmt.Errorf("prefix cache not used (%v)", err)
}

// Restore fills seq, whose cache must be empty, with prefix's cached
// state when ids begin with prefix (and go on past it) and the entry
// passes every check a session's does, plus being the user's own and
// holding exactly what its name stands for. It returns the positions
// restored: 0 for a miss. An entry that fails a check is removed and the
// error returned, still a miss: seq is as it was.
func (p *Prefixes) Restore(seq *engine.Sequence, m *engine.Model, tok string, prefix, ids []int32) (int, error) {
	if len(prefix) < MinPrefix || len(ids) <= len(prefix) || !slices.Equal(ids[:len(prefix)], prefix) || seq.Cache.Len() != 0 {
		return 0, nil
	}
	if ok, err := p.ready(); !ok {
		return 0, err
	}
	path := p.path(m, tok, prefix)
	snap, err := openEntry(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err == nil {
		defer snap.Close()
		err = checkEntry(snap, m, tok, prefix, seq.Cache.Window())
		if err == nil {
			if ierr := seq.Cache.Import(snap.KV); ierr != nil {
				err = fmt.Errorf("cannot be restored (%v)", ierr)
			}
		}
	}
	if err != nil {
		seq.Cache.Truncate(0) // it was empty
		os.Remove(path)
		return 0, fmt.Errorf("prefix cache: the entry %s %v: removed", path, err)
	}
	seq.Tokens = append(seq.Tokens[:0], prefix...)
	now := time.Now()
	os.Chtimes(path, now, now) // most recently used
	return len(prefix), nil
}

// openEntry opens the entry at path if it is the user's own and no one
// else may write it, and validates it as a session; the file mapped is
// the file checked.
func openEntry(path string) (*Snapshot, error) {
	f, _, err := privatefile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sf, err := safetensors.MapPrivate(f) // copy-on-write: a cache may adopt its KV state
	if err != nil {
		return nil, fmt.Errorf("is not a snapshot (%v)", err)
	}
	s, err := validate(sf)
	if err != nil {
		sf.Close()
		return nil, fmt.Errorf("is damaged (%v)", err)
	}
	s.Path = path
	return s, nil
}

// checkEntry checks that snap holds what its name hashes: model m's
// fingerprint, tokenizer fingerprint tok and exactly prefix; a planted
// or renamed entry holds something else.
func checkEntry(snap *Snapshot, m *engine.Model, tok string, prefix []int32, window int) error {
	switch {
	case snap.Meta.ModelFingerprint != m.Fingerprint:
		return errors.New("was made with another model than its name says")
	case snap.Meta.TokenizerFingerprint != tok:
		return errors.New("was made with another tokenizer than its name says")
	case !slices.Equal(snap.Meta.Tokens, prefix):
		return errors.New("holds other tokens than its name says")
	}
	if err := snap.CheckModel(m, tok, window); err != nil {
		return fmt.Errorf("does not fit the model (%v)", err)
	}
	return nil
}

// Keep saves seq's first len(prefix) positions as prefix's entry, unless
// the entry exists or seq does not hold prefix, then trims the folder to
// Limit.
func (p *Prefixes) Keep(seq *engine.Sequence, m *engine.Model, tok string, prefix []int32) error {
	if len(prefix) < MinPrefix || len(seq.Tokens) < len(prefix) || !slices.Equal(seq.Tokens[:len(prefix)], prefix) {
		return nil
	}
	if ok, err := p.ready(); !ok {
		return err
	}
	path := p.path(m, tok, prefix)
	if _, err := os.Lstat(path); err == nil {
		return nil
	}
	kv, err := seq.Cache.Export()
	if err != nil {
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
