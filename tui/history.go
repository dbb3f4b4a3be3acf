package tui

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/driftwoodlabs/driftwood/internal/atomicfile"
	"github.com/driftwoodlabs/driftwood/internal/xdg"
)

// historyLimit is how many inputs the history keeps.
const historyLimit = 1000

// DefaultHistoryFile is $XDG_STATE_HOME/driftwood/history, by default
// under ~/.local/state.
func DefaultHistoryFile() string { return xdg.State("history") }

// history is the inputs sent so far, browsed with Up and Down, and kept
// in a file (one JSON string per line, so that multi-line inputs survive)
// unless file is "".
type history struct {
	file    string
	entries []string
	// pos is the entry shown; len(entries) is the draft being typed.
	pos   int
	draft string
}

// loadHistory reads the history file (a missing file is an empty
// history). A file grown past twice the limit is cut back to the limit.
func loadHistory(file string) (*history, error) {
	h := &history{file: file}
	if file == "" {
		return h, nil
	}
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return h, nil
	}
	if err != nil {
		return h, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	lines := 0
	for sc.Scan() {
		var s string
		if json.Unmarshal(sc.Bytes(), &s) == nil && s != "" {
			h.entries = append(h.entries, s)
		}
		lines++
	}
	if err := sc.Err(); err != nil {
		return h, fmt.Errorf("history %s: %w", file, err)
	}
	if len(h.entries) > historyLimit {
		h.entries = h.entries[len(h.entries)-historyLimit:]
	}
	h.pos = len(h.entries)
	if lines > 2*historyLimit {
		return h, h.rewrite()
	}
	return h, nil
}

// rewrite writes the whole history to the file.
func (h *history) rewrite() error {
	return atomicfile.WriteMode(h.file, 0o600, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		for _, e := range h.entries {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	})
}

// add records a sent input (not twice in a row) and goes back to an empty
// draft.
func (h *history) add(s string) error {
	h.pos, h.draft = len(h.entries), ""
	if s == "" || len(h.entries) > 0 && h.entries[len(h.entries)-1] == s {
		return nil
	}
	h.entries = append(h.entries, s)
	if len(h.entries) > historyLimit {
		h.entries = h.entries[1:]
	}
	h.pos = len(h.entries)
	if h.file == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(h.file), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(h.file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	err = json.NewEncoder(f).Encode(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// prev returns the entry before the one shown; current is the input as
// it is (kept as the draft when leaving it).
func (h *history) prev(current string) (string, bool) {
	if h.pos == 0 {
		return "", false
	}
	if h.pos == len(h.entries) {
		h.draft = current
	}
	h.pos--
	return h.entries[h.pos], true
}

// next returns the entry after the one shown, or the draft.
func (h *history) next() (string, bool) {
	if h.pos >= len(h.entries) {
		return "", false
	}
	h.pos++
	if h.pos == len(h.entries) {
		return h.draft, true
	}
	return h.entries[h.pos], true
}
