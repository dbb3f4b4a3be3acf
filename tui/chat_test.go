package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	goldenfile "github.com/charmbracelet/x/exp/golden"

	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestChatSession drives a whole chat: a reply streams; the next one
// switches controller after its fourth token (abc's restricted tokens,
// then bang's forced ones); the token view shows which was which; a third
// reply is stopped with Esc after three tokens and kept. The final screen
// is compared with the golden file (go test -update rewrites it), and the
// conversation is auto-saved on quit.
func TestChatSession(t *testing.T) {
	opt := testOptions(t)
	var g gate
	c := startChat(t, opt, g.pace)
	c.loaded()

	c.typeLine("hello")
	if s := c.idle(); s.messages != 2 {
		t.Fatalf("%d messages after the first reply", s.messages)
	}

	c.typeLine("/controller abc")
	c.wait("abc", func(s snapshot) bool { return s.controller == "abc" })
	h := g.arm(4)
	c.typeLine("switch")
	h.waitHeld(t)
	c.typeLine("/controller bang")
	c.wait("bang", func(s snapshot) bool { return s.controller == "bang" })
	close(h.release)
	c.idle()

	c.key(tea.KeyPressMsg{Code: 't', Mod: tea.ModCtrl})
	c.typeLine("/controller off")
	c.wait("no controller", func(s snapshot) bool { return s.controller == "" })
	h = g.arm(3)
	c.typeLine("stop")
	h.waitHeld(t)
	c.key(esc)
	c.wait("the stop", func(s snapshot) bool { return s.stopping })
	close(h.release)
	if s := c.idle(); s.messages != 6 {
		t.Fatalf("%d messages after three replies", s.messages)
	}

	m, screen := c.finalScreen()
	msgs := m.chat.conv.Messages()
	second, third := msgs[3].Content, msgs[5].Content
	if !strings.HasSuffix(second, strings.Repeat("!", 8)) || strings.Trim(second[:len(second)-8], "ABC") != "" || len(second) != 12 {
		t.Errorf("second reply %q: want 4 of A, B, C (abc) then 8 \"!\" (bang)", second)
	}
	if marks := m.chat.transcript.entries[len(m.chat.transcript.entries)-1].marks; len(marks) != 3 {
		t.Errorf("stopped reply %q has %d tokens, want 3", third, len(marks))
	}
	goldenfile.RequireEqual(t, screen)

	closed, err := m.Close()
	if err != nil || closed.Name == "" {
		t.Fatalf("auto-save: %+v, %v", closed, err)
	}
	list, _ := opt.Sessions.List()
	if len(list) != 1 || list[0].Turns != 3 {
		t.Errorf("sessions after quit: %+v", list)
	}
}

// TestCtrlCLadderInChat: while a reply runs, Ctrl+C first clears the
// input, then stops the reply; then one press arms and the next quits.
func TestCtrlCLadderInChat(t *testing.T) {
	var g gate
	c := startChat(t, testOptions(t), g.pace)
	c.loaded()
	h := g.arm(2)
	c.typeLine("go on")
	h.waitHeld(t)
	c.tm.Type("draft")
	c.wait("the draft", func(s snapshot) bool { return s.input == "draft" })
	c.key(ctrlC)
	if s := c.wait("a cleared input", func(s snapshot) bool { return s.input == "" }); !s.replying || s.stopping {
		t.Fatal("clearing the input stopped the reply")
	}
	c.key(ctrlC)
	c.wait("the stop", func(s snapshot) bool { return s.stopping })
	close(h.release)
	c.idle()
	m, _ := c.finalScreen()
	if msgs := m.chat.conv.Messages(); len(msgs) != 2 || msgs[1].Content == "" {
		t.Errorf("the stopped reply was not kept: %+v", msgs)
	}
}

// TestFirstRunPicker: with no model configured, the models in the
// Hugging Face cache are offered; choosing one loads it and remembers its
// repo id in the config file.
func TestFirstRunPicker(t *testing.T) {
	opt := testOptions(t)
	opt.Model = ""
	opt.ConfigPath = filepath.Join(t.TempDir(), "driftwood", "config.toml")
	cacheTiny(t, opt.Hub.CacheDir)
	c := startChat(t, opt, nil)
	s := c.wait("the picker", func(s snapshot) bool { return s.state == statePickModel })
	t.Run("picker", func(t *testing.T) { goldenfile.RequireEqual(t, normalize(s.screen)) })
	c.key(enter)
	if s := c.loaded(); !strings.Contains(plain(s.screen), "org/tiny") {
		t.Errorf("status bar does not name org/tiny:\n%s", plain(s.screen))
	}
	c.wait("the note", func(s snapshot) bool { return strings.Contains(plain(s.screen), "remembered org/tiny") })
	if cfg, err := config.Load(opt.ConfigPath); err != nil || cfg.Model != "org/tiny" {
		t.Errorf("config file model %q, %v; want org/tiny", cfg.Model, err)
	}
}

// TestLoadError shows a load error with what to do, not a crash.
func TestLoadError(t *testing.T) {
	opt := testOptions(t)
	opt.Model = "/nonexistent/models/tiny"
	c := startChat(t, opt, nil)
	c.wait("the error", func(s snapshot) bool { return s.state == stateLoadFailed })
	_, screen := c.finalScreen()
	goldenfile.RequireEqual(t, screen)
}

// cacheTiny puts tiny-f32 in a Hugging Face cache as org/tiny at main.
func cacheTiny(t *testing.T, cache string) {
	t.Helper()
	const commit = "0123456789abcdef0123456789abcdef01234567"
	storage := filepath.Join(cache, "models--org--tiny")
	snap := filepath.Join(storage, "snapshots", commit)
	for _, d := range []string{snap, filepath.Join(storage, "refs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		b, err := os.ReadFile(filepath.Join(golden.ModelDir("tiny-f32"), n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(snap, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(storage, "refs", "main"), []byte(commit), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestInputKeys: Ctrl+J starts a new line, Enter sends both lines, Up
// brings the message back from the history, Tab completes a command.
func TestInputKeys(t *testing.T) {
	opt := testOptions(t)
	c := startChat(t, opt, nil)
	c.loaded()
	c.tm.Type("line one")
	c.key(tea.KeyPressMsg{Code: 'j', Mod: tea.ModCtrl})
	c.typeLine("line two")
	c.idle()
	c.key(tea.KeyPressMsg{Code: tea.KeyUp})
	c.wait("the history", func(s snapshot) bool { return s.input == "line one\nline two" })
	c.key(ctrlC)
	c.tm.Send(tea.PasteMsg{Content: "pasted\ntext"})
	c.wait("the paste", func(s snapshot) bool { return s.input == "pasted\ntext" })
	c.key(ctrlC)
	c.tm.Type("/sess")
	c.key(tea.KeyPressMsg{Code: tea.KeyTab})
	c.wait("the completion", func(s snapshot) bool { return s.input == "/sessions" })
	c.key(ctrlC)
	c.wait("a cleared input", func(s snapshot) bool { return s.input == "" })
	m, _ := c.finalScreen()
	if msgs := m.chat.conv.Messages(); msgs[0].Content != "line one\nline two" {
		t.Errorf("sent %q", msgs[0].Content)
	}
	if data, err := os.ReadFile(opt.HistoryFile); err != nil || string(data) != "\"line one\\nline two\"\n" {
		t.Errorf("history file %q, %v", data, err)
	}
}

// TestCommandsInChat runs the commands that change or show the
// conversation.
func TestCommandsInChat(t *testing.T) {
	c := startChat(t, testOptions(t), nil)
	c.loaded()
	c.typeLine("/set max_tokens 5")
	c.wait("the setting", func(s snapshot) bool { return s.notice == "max_tokens = 5" })
	c.typeLine("/system Be brief.")
	c.wait("the system prompt", func(s snapshot) bool { return s.notice == "system prompt set" })
	c.typeLine("hi")
	if s := c.idle(); s.messages != 3 {
		t.Fatalf("%d messages, want system, user, assistant", s.messages)
	}
	before := c.idle()
	first := before.last
	c.typeLine("/regen")
	c.wait("the regenerated reply", func(s snapshot) bool { return s.started > before.started })
	if s := c.idle(); s.messages != 3 || s.last != first {
		t.Errorf("after /regen: %d messages, reply %q (greedy: want %q again)", s.messages, s.last, first)
	}
	for _, tc := range []struct{ line, want string }{
		{"/show", "max_tokens  5"},
		{"/show", "system      Be brief."},
		{"/stats", "reply   "},
		{"/sessions", "chat-"}, // saved after the first reply
		{"/help", "/controller NAME [ARG] | off"},
		{"/system", "system prompt: Be brief."},
	} {
		c.typeLine(tc.line)
		c.wait(tc.line, func(s snapshot) bool { return strings.Contains(s.last, tc.want) })
	}
	c.typeLine("/copy")
	c.wait("the copy", func(s snapshot) bool { return strings.HasPrefix(s.notice, "copied the last reply") })
	c.typeLine("/set temp hot")
	c.wait("the error", func(s snapshot) bool { return s.notice == `temp: "hot" is not a number` && s.input == "" })
	c.typeLine("/bogus")
	c.wait("the error", func(s snapshot) bool {
		return strings.HasPrefix(s.notice, "unknown command /bogus") && s.input == "/bogus"
	})
}

// TestControllerFault: a controller that traps is switched off for the
// rest of the reply; the fault shows in the notice and the log pane and
// the reply completes.
func TestControllerFault(t *testing.T) {
	c := startChat(t, testOptions(t), nil)
	c.loaded()
	c.typeLine("/controller trap")
	c.wait("trap", func(s snapshot) bool { return s.controller == "trap" })
	c.typeLine("hi")
	c.wait("the fault", func(s snapshot) bool {
		return strings.HasPrefix(s.notice, "controller trap:") && len(s.logs) == 1 && s.logs[0].fault
	})
	if s := c.idle(); s.messages != 2 || s.last == "" {
		t.Errorf("the reply did not survive the fault: %d messages, %q", s.messages, s.last)
	}
}

// TestEditor: Ctrl+E edits the input in $VISUAL.
func TestEditor(t *testing.T) {
	script := filepath.Join(t.TempDir(), "edit")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nprintf ' and more\\nlines' >> \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VISUAL", script)
	c := startChat(t, testOptions(t), nil)
	c.loaded()
	c.tm.Type("draft")
	c.key(tea.KeyPressMsg{Code: 'e', Mod: tea.ModCtrl})
	c.wait("the edited text", func(s snapshot) bool { return s.input == "draft and more\nlines" })
}

// TestContextFull: a reply that fills the window ends with the reason and
// what to do, and the status bar warns.
func TestContextFull(t *testing.T) {
	opt := testOptions(t)
	opt.Config.Context, opt.Config.MaxTokens = 200, 0
	c := startChat(t, opt, nil)
	c.loaded()
	c.typeLine("/controller abc") // A, B and C only: no end of turn
	c.wait("abc", func(s snapshot) bool { return s.controller == "abc" })
	c.typeLine("go on forever")
	s := c.idle()
	if !strings.Contains(s.last, "The context window is full (200 tokens), so the reply stops here.") || !strings.Contains(plain(s.screen), "ctx 200/200 full ") {
		t.Errorf("last entry %q; screen:\n%s", s.last, plain(s.screen))
	}
}

// TestTooLongMessage: a paste longer than the context window is refused
// with the reason, goes back into the input box, and leaves the
// conversation as it was: the next message works and the saved session
// can continue.
func TestTooLongMessage(t *testing.T) {
	opt := testOptions(t)
	c := startChat(t, opt, nil)
	c.loaded()
	c.typeLine("hello")
	before := c.idle()
	huge := strings.TrimSpace(strings.Repeat("paste ", 2500))
	c.tm.Send(tea.PasteMsg{Content: huge})
	c.key(enter)
	s := c.wait("the refusal", func(s snapshot) bool { return strings.HasPrefix(s.notice, "not sent:") })
	s = c.idle()
	if s.input != huge || s.messages != before.messages || s.used != before.used {
		t.Fatalf("after the refusal: input of %d bytes, %d messages, %d tokens; before: %d messages, %d tokens",
			len(s.input), s.messages, s.used, before.messages, before.used)
	}
	if strings.Contains(s.last, "paste paste") {
		t.Errorf("the refused message is still in the transcript")
	}
	c.key(ctrlC) // clears the input
	c.wait("an empty input", func(s snapshot) bool { return s.input == "" })
	c.typeLine("short")
	if s := c.idle(); s.messages != before.messages+2 || strings.HasPrefix(s.notice, "not sent") {
		t.Fatalf("the next message: %d messages, notice %q", s.messages, s.notice)
	}
}

// TestTypingClosesHelp: a key typed while the help is open closes it and
// reaches the input; ?, Esc and q only close it.
func TestTypingClosesHelp(t *testing.T) {
	c := startChat(t, testOptions(t), nil)
	c.loaded()
	c.tm.Type("?")
	c.wait("the help", func(s snapshot) bool { return s.help })
	c.key(esc)
	c.wait("the help closed", func(s snapshot) bool { return !s.help && s.input == "" })
	c.tm.Type("?")
	c.wait("the help", func(s snapshot) bool { return s.help })
	c.tm.Type("hi")
	c.wait("the typed text", func(s snapshot) bool { return !s.help && s.input == "hi" })
}

// TestControllerPicker: /controllers lists each controller with where it
// comes from.
func TestControllerPicker(t *testing.T) {
	c := startChat(t, testOptions(t), nil)
	c.loaded()
	c.typeLine("/controllers")
	s := c.wait("the picker", func(s snapshot) bool { return s.picker })
	if screen := plain(s.screen); !strings.Contains(screen, "abc") || !strings.Contains(screen, filepath.Join("controllers", "abc.wat")) {
		t.Errorf("picker:\n%s", screen)
	}
	// Each controller says what argument it takes; one that needs an
	// argument is not switched to without it: the input asks for it.
	c.wait("the descriptions", func(s snapshot) bool { return strings.Contains(plain(s.screen), "required: a word") })
	c.tm.Type("/needy")
	c.key(enter)
	c.key(enter)
	s = c.wait("the input to ask for the argument", func(s snapshot) bool { return !s.picker && s.input == "/controller needy " })
	if !strings.Contains(s.notice, "needy takes an argument (a word)") || s.controller != "" {
		t.Errorf("notice %q, controller %q", s.notice, s.controller)
	}
}
