package tui

import (
	"fmt"
	"time"

	"github.com/driftwoodlabs/driftwood/sessions"
)

// heldSession is which session the conversation saves under and this
// process's claim on it, so that another process cannot write it while
// the chat is open.
type heldSession struct {
	store sessions.Store
	// name is the session ("" until the conversation is first saved);
	// claim the hold on it; dirty is set when the conversation changed
	// since it was saved or loaded.
	name  string
	claim *sessions.Claim
	dirty bool
}

// nameOrNew is the name the conversation saves under, made up from the
// time for a conversation never saved (with a suffix when another
// session has that name already).
func (h *heldSession) nameOrNew() string {
	if h.name == "" {
		base := "chat-" + time.Now().Format("20060102-150405")
		h.name = base
		for i := 2; h.store.Exists(h.name); i++ {
			h.name = fmt.Sprintf("%s-%d", base, i)
		}
	}
	return h.name
}

// claimFor returns the claim on session name: the conversation's own
// when it is that session, else a new one (an error when another process
// holds it).
func (h *heldSession) claimFor(name string) (*sessions.Claim, error) {
	if h.claim != nil && h.claim.Name() == name {
		return h.claim, nil
	}
	return h.store.Claim(name)
}

// owns reports whether c is the conversation's claim.
func (h *heldSession) owns(c *sessions.Claim) bool { return c == h.claim }

// keep makes c the conversation's claim, releasing the one it had.
func (h *heldSession) keep(c *sessions.Claim) {
	if c != h.claim {
		h.claim.Release()
		h.claim = c
	}
}

// drop releases c unless it is the conversation's claim.
func (h *heldSession) drop(c *sessions.Claim) {
	if c != h.claim {
		c.Release()
	}
}

// take makes c, the claim on session name, the conversation's, just
// saved or loaded.
func (h *heldSession) take(name string, c *sessions.Claim) {
	h.keep(c)
	h.name, h.dirty = name, false
}
