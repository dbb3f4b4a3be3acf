package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessageWaitsForTheSwitch: a message sent while the controller asked
// for is still starting waits for it (the transcript shows it, the status
// bar says so) and then runs under it; Esc takes a waiting message back.
// Before, the message ran under the previous controller (here none).
func TestMessageWaitsForTheSwitch(t *testing.T) {
	var g gate
	c := startChatWith(t, testOptions(t), func(m *App) { m.switchPace = g.switchPace })
	c.loaded()

	h := g.armSwitch()
	c.typeLine("/controller abc")
	h.waitHeld(t)
	c.typeLine("spell it")
	s := c.wait("the message to wait", func(s snapshot) bool { return s.queued })
	if screen := plain(s.screen); !strings.Contains(screen, "│ spell it") || !strings.Contains(screen, "starting controller abc") {
		t.Errorf("the waiting message or the switch is not shown:\n%s", screen)
	}
	close(h.release)
	s = c.idle()
	if s.controller != "abc" || s.messages != 2 || s.last == "" || strings.Trim(s.last, "ABC") != "" {
		t.Fatalf("after the switch: controller %q, %d messages, reply %q; want a reply of A, B and C only", s.controller, s.messages, s.last)
	}

	h = g.armSwitch()
	c.typeLine("/controller off")
	h.waitHeld(t)
	c.typeLine("take me back")
	c.wait("the message to wait", func(s snapshot) bool { return s.queued })
	c.key(esc)
	s = c.wait("the message back in the input", func(s snapshot) bool { return !s.queued && s.input == "take me back" })
	if strings.Contains(plain(s.screen), "│ take me back") {
		t.Error("the message taken back is still in the transcript")
	}
	close(h.release)
	if s = c.wait("no controller", func(s snapshot) bool { return s.controller == "" }); s.messages != 2 {
		t.Errorf("%d messages after the message was taken back, want 2", s.messages)
	}
}

// TestRefusedSwitch: a controller that refuses its argument is not
// switched to; the previous one stays on and says so, and a message that
// waited for it is not sent (it goes back into the input).
func TestRefusedSwitch(t *testing.T) {
	var g gate
	c := startChatWith(t, testOptions(t), func(m *App) { m.switchPace = g.switchPace })
	c.loaded()
	c.typeLine("/controller abc")
	c.wait("abc", func(s snapshot) bool { return s.controller == "abc" && strings.Contains(s.notice, "abc on") })

	h := g.armSwitch()
	c.typeLine("/controller picky whatever")
	h.waitHeld(t)
	c.typeLine("under picky")
	c.wait("the message to wait", func(s snapshot) bool { return s.queued })
	close(h.release)
	s := c.wait("the refusal", func(s snapshot) bool { return strings.Contains(s.notice, "stays on") })
	t.Logf("the refusal: %s", s.notice)
	if !strings.Contains(s.notice, "controller abc stays on") || !strings.Contains(s.notice, "not sent") {
		t.Errorf("notice %q: want it to say abc stays on and the message was not sent", s.notice)
	}
	if s = c.idle(); s.controller != "abc" || s.input != "under picky" || s.messages != 0 {
		t.Errorf("after the refusal: controller %q, input %q, %d messages", s.controller, s.input, s.messages)
	}
}

// TestControllerArgFromFile: /controller NAME @FILE gives the controller
// the file's contents (a schema too large for one line), @@ a leading @
// itself, and a file that cannot be read is said so, the controller
// unchanged.
func TestControllerArgFromFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(file, []byte("{\"type\": \"boolean\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startChat(t, testOptions(t), nil)
	c.loaded()
	c.typeLine("/controller abc @" + file)
	c.wait("abc", func(s snapshot) bool { return s.controller == "abc" && strings.Contains(s.notice, "abc on") })
	c.typeLine("/controller abc @" + file + ".missing")
	s := c.wait("the refusal", func(s snapshot) bool { return strings.Contains(s.notice, "missing") })
	if !strings.Contains(s.notice, "@@") || s.controller != "abc" {
		t.Errorf("notice %q, controller %q: want the file named, how to write a leading @, and abc still on", s.notice, s.controller)
	}
	m, _ := c.finalScreen()
	if _, arg := m.chat.host.Current(); arg != "{\"type\": \"boolean\"}\n" {
		t.Errorf("the controller's argument is %q, want the file's contents", arg)
	}
}
