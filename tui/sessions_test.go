package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	goldenfile "github.com/charmbracelet/x/exp/golden"

	"github.com/driftwoodlabs/driftwood/sessions"
)

// TestSaveNewLoad saves a conversation, starts a new one, and loads the
// first back from the picker: the model state is restored, not
// re-processed.
func TestSaveNewLoad(t *testing.T) {
	opt := testOptions(t)
	c := startChat(t, opt, nil)
	c.loaded()
	c.typeLine("/controller abc")
	c.wait("abc", func(s snapshot) bool { return s.controller == "abc" })
	c.typeLine("remember me")
	tokens := c.idle().used
	c.typeLine("/save demo")
	c.wait("the save", func(s snapshot) bool { return strings.Contains(s.notice, "saved session demo") })

	c.typeLine("/new")
	if s := c.wait("a new conversation", func(s snapshot) bool { return strings.HasPrefix(s.notice, "new conversation") }); s.messages != 0 {
		t.Fatalf("%d messages after /new", s.messages)
	}
	c.typeLine("/controller off")
	c.wait("no controller", func(s snapshot) bool { return s.controller == "" })
	c.typeLine("/load")
	c.wait("the session picker", func(s snapshot) bool { return s.picker })
	c.key(enter)
	c.wait("the restore", func(s snapshot) bool { return strings.Contains(s.notice, "restored") })
	if s := c.idle(); s.messages != 2 || s.controller != "abc" {
		t.Fatalf("after /load: %d messages, controller %q", s.messages, s.controller)
	}

	m, screen := c.finalScreen()
	if m.chat.conv.Tokens() != tokens {
		t.Errorf("restored %d tokens, saved %d", m.chat.conv.Tokens(), tokens)
	}
	goldenfile.RequireEqual(t, screen)
	if closed, err := m.Close(); err != nil || closed.Wrote || closed.Name != "demo" {
		t.Errorf("Close: %+v (%v); the loaded session demo was unchanged", closed, err)
	}
}

// TestContinue: quitting saves the conversation; --continue brings it
// back with its model state.
func TestContinue(t *testing.T) {
	opt := testOptions(t)
	c := startChat(t, opt, nil)
	c.loaded()
	c.typeLine("first run")
	used := c.idle().used
	m, _ := c.finalScreen()
	if closed, err := m.Close(); err != nil || closed.Name == "" {
		t.Fatalf("quit: %+v, %v", closed, err)
	}

	opt.Continue = true
	c = startChat(t, opt, nil)
	s := c.wait("the restore", func(s snapshot) bool { return strings.Contains(s.last, "restored") })
	if s = c.idle(); s.used != used || s.messages != 2 {
		t.Errorf("resumed with %d tokens, %d messages; saved %d tokens", s.used, s.messages, used)
	}
}

// TestSessionInUse: the chat holds its session while it is open, so that
// another process cannot overwrite it, and refuses a session that another
// holds.
func TestSessionInUse(t *testing.T) {
	opt := testOptions(t)
	opt.Session = "notes"
	c := startChat(t, opt, nil)
	c.loaded()
	c.wait("the new session", func(s snapshot) bool { return strings.Contains(s.notice, "new session notes") })
	var busy *sessions.BusyError
	if _, err := opt.Sessions.Claim("notes"); !errors.As(err, &busy) {
		t.Fatalf("another claim on the chat's session: %v, want it refused", err)
	}
	other, err := opt.Sessions.Claim("other")
	if err != nil {
		t.Fatal(err)
	}
	c.typeLine("hello")
	c.idle()
	c.typeLine("/save other")
	c.wait("the refusal", func(s snapshot) bool { return strings.Contains(s.notice, `session "other" is in use`) })
	other.Release()
	m, _ := c.finalScreen()
	if closed, err := m.Close(); err != nil || closed.Name != "notes" {
		t.Fatalf("quit: %+v, %v; want notes", closed, err)
	}
	claim, err := opt.Sessions.Claim("notes")
	if err != nil {
		t.Fatalf("the session is still held after the chat closed: %v", err)
	}
	claim.Release()
}

// TestSaveKeepsOtherSessions: /save NAME does not replace another
// conversation's session, and a conversation saved on quit never takes
// an existing session's name.
func TestSaveKeepsOtherSessions(t *testing.T) {
	opt := testOptions(t)
	c := startChat(t, opt, nil)
	c.loaded()
	c.typeLine("first")
	c.idle()
	c.typeLine("/save demo")
	c.wait("the save", func(s snapshot) bool { return strings.Contains(s.notice, "saved session demo") })
	c.typeLine("/new")
	c.wait("a new conversation", func(s snapshot) bool { return strings.HasPrefix(s.notice, "new conversation") })
	c.typeLine("second")
	c.idle()
	c.typeLine("/save demo")
	c.wait("the refusal", func(s snapshot) bool { return strings.Contains(s.notice, `session "demo" already exists`) })
	m, _ := c.finalScreen()
	closed, err := m.Close()
	if err != nil || closed.Name == "" || closed.Name == "demo" {
		t.Fatalf("quit: %+v, %v", closed, err)
	}
	snap, err := opt.Sessions.Open("demo")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if msgs := snap.Meta.Messages; len(msgs) != 2 || msgs[0].Content != "first" {
		t.Errorf("session demo now holds %+v", msgs)
	}
}

// TestCompaction: on a small window the conversation goes on past it, the
// transcript marks where the model's view starts, /compact does it on
// demand, and --continue brings the same view back.
func TestCompaction(t *testing.T) {
	opt := testOptions(t)
	opt.Config.Context, opt.Config.MaxTokens = 200, 16
	c := startChat(t, opt, nil)
	c.loaded()
	mark := "▲ the model no longer sees the"
	var s snapshot
	for i := 0; i < 8 && !strings.Contains(s.notice, "left the model's view"); i++ {
		c.typeLine("one more question about rivers")
		s = c.idle()
	}
	if !strings.Contains(s.notice, "left the model's view") || !strings.Contains(plain(s.screen), mark) {
		t.Fatalf("no compaction after 8 turns: notice %q; screen:\n%s", s.notice, plain(s.screen))
	}
	c.typeLine("and lakes")
	c.idle()
	c.typeLine("/compact")
	s = c.wait("the compaction", func(s snapshot) bool {
		return strings.Contains(s.notice, "left the model's view") && strings.Contains(s.notice, "stays in the cache")
	})
	// The figures count the same thing: what the model holds of the
	// conversation (the notice's also counts the end of the last reply,
	// which the model has not read yet).
	var before, after int
	if _, err := fmt.Sscanf(s.notice[strings.Index(s.notice, ": ")+2:], "%d → %d tokens", &before, &after); err != nil {
		t.Fatalf("notice %q: %v", s.notice, err)
	}
	if after < s.used || after > s.used+2 {
		t.Errorf("/compact says %d → %d tokens, the status bar %d", before, after, s.used)
	}
	m, _ := c.finalScreen()
	messages, outOfView, used := len(m.chat.conv.Messages()), m.chat.conv.OutOfView(), m.chat.conv.Tokens()
	if outOfView == 0 || outOfView >= messages {
		t.Fatalf("%d of %d messages out of view", outOfView, messages)
	}
	if closed, err := m.Close(); err != nil || closed.Name == "" {
		t.Fatalf("quit: %+v, %v", closed, err)
	}

	opt.Continue = true
	c = startChat(t, opt, nil)
	c.wait("the restore", func(s snapshot) bool {
		return strings.Contains(s.notice, "restored") || strings.Contains(s.last, "restored")
	})
	s = c.idle()
	m, screen := c.finalScreen()
	if got := m.chat.conv.OutOfView(); got != outOfView || s.messages != messages || s.used != used {
		t.Errorf("resumed with %d out of view, %d messages, %d tokens; saved %d, %d, %d", got, s.messages, s.used, outOfView, messages, used)
	}
	if strings.Count(plain(screen), mark) != 1 {
		t.Errorf("the resumed transcript should mark the view once:\n%s", plain(screen))
	}
}
