package tui

import (
	"strings"
	"testing"
)

// TestBackendNote checks that what the backend selection had to say (on a
// Mac without mlx-c: the GPU is unused) reaches the status area once the
// model is loaded.
func TestBackendNote(t *testing.T) {
	opt := testOptions(t)
	const note = "the GPU is unused: mlx-c is not installed (brew install mlx-c); running on the CPU backend"
	calls := 0
	opt.BackendNote = func() string { calls++; return note }
	c := startChat(t, opt, nil)
	s := c.wait("the note", func(s snapshot) bool { return s.chat && s.notice == note })
	if !strings.Contains(plain(s.screen), "brew install mlx-c") {
		t.Errorf("the screen does not show the note:\n%s", plain(s.screen))
	}
	if calls != 1 {
		t.Errorf("BackendNote called %d times, want once", calls)
	}
}
