package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	goldenfile "github.com/charmbracelet/x/exp/golden"
)

// TestLongErrorReadsWhole: an error longer than the window is wide wraps
// above the input, the transcript giving up the lines it takes, instead
// of being cut with "…".
func TestLongErrorReadsWhole(t *testing.T) {
	c := startChat(t, testOptions(t), nil)
	c.loaded()
	c.typeLine("hello")
	c.idle()
	c.typeLine("/think on")
	s := c.wait("the error", func(s snapshot) bool { return strings.Contains(s.notice, "no thinking switch") })
	screen := normalize(s.screen)
	lines := strings.Split(screen, "\n")
	if len(lines) != 24 || !strings.Contains(strings.Join(lines, " "), s.notice) {
		t.Errorf("%d lines; the notice %q is not on the screen whole:\n%s", len(lines), s.notice, screen)
	}
	goldenfile.RequireEqual(t, screen)
	// The log pane wraps it too.
	c.key(tea.KeyPressMsg{Code: 'l', Mod: tea.ModCtrl})
	c.wait("the log pane", func(s snapshot) bool {
		return strings.Contains(plain(s.screen), "│ driftwood: the chat template of tiny-f32 has no thinking switch")
	})
	if screen := plain(c.probe.get().screen); !strings.Contains(screen, "│ (enable_thinking): /think changes nothing for this model") {
		t.Errorf("the log pane does not show the whole message:\n%s", screen)
	}
}

// TestNoticeShare: a notice takes at most a third of the window's
// height; what does not fit is cut, pointing to the log pane.
func TestNoticeShare(t *testing.T) {
	c := &Common{Styles: DefaultStyles(true), Width: 40, Height: 9}
	n := &noticeLine{common: c, logs: &logPane{common: c}}
	cases := []struct {
		reason string
		text   string
		lines  int
		cut    bool
	}{
		{"a short one is one line", "saved", 1, false},
		{"a long one wraps", strings.Repeat("word ", 14), 2, false},
		{"a very long one is cut", strings.Repeat("word ", 100), 3, true},
	}
	for _, tc := range cases {
		n.say(tc.text)
		lines := strings.Split(ansi.Strip(n.View()), "\n")
		if len(lines) != tc.lines || n.Height() != tc.lines {
			t.Errorf("%s: %d lines (Height %d), want %d:\n%s", tc.reason, len(lines), n.Height(), tc.lines, strings.Join(lines, "\n"))
		}
		for _, l := range lines {
			if ansi.StringWidth(l) > c.Width {
				t.Errorf("%s: line %q is wider than %d", tc.reason, l, c.Width)
			}
		}
		if cut := strings.HasSuffix(lines[len(lines)-1], "… (ctrl+l: the log)"); cut != tc.cut {
			t.Errorf("%s: cut %v, want %v", tc.reason, cut, tc.cut)
		}
	}
}
