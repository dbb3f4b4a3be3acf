package tui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	goldenfile "github.com/charmbracelet/x/exp/golden"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// thinkingReply is what the "think" controller makes the model say.
const thinkingReply = "<think>\nThe user says hi. I should greet them back.\n</think>\n\nHello **there**!"

// thinkingOptions runs the chat on a Qwen3-style ChatML model with a
// controller, "think", that forces thinkingReply at the first step of a
// reply and stops: in the tiny tokenizer <think> and </think> take
// several tokens each, so the tags arrive in pieces.
func thinkingOptions(t *testing.T) Options {
	t.Helper()
	opt := testOptions(t)
	opt.Model = golden.ChatMLModel(t, golden.IMEnd)
	opt.Config.MaxTokens = 64
	opt.Config.Sampling.Seed = 7 // /show on the golden screen names it
	writeForcer(t, opt, thinkingReply)
	return opt
}

// writeForcer writes the controller "think", which forces reply's
// tokens at the first step of a reply and stops.
func writeForcer(t *testing.T, opt Options, reply string) {
	t.Helper()
	tok, err := tokenizer.Load(filepath.Join(opt.Model, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ids strings.Builder
	n := 0
	for _, id := range tok.Encode(reply) {
		fmt.Fprintf(&ids, `\%02x\%02x\%02x\%02x`, byte(id), byte(id>>8), byte(id>>16), byte(id>>24))
		n++
	}
	// The result record: flags FORCE|STOP, force_ptr 4096, force_len n.
	src := fmt.Sprintf(`(module`+watPrelude+`
  (data (i32.const 1024) "\0a\00\00\00\00\00\00\00\00\00\00\00\00\10\00\00\%02x\%02x\00\00")
  (data (i32.const 4096) "%s")
  (func (export "dw_init") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32) (i32.const 1024)))`, byte(n), byte(n>>8), ids.String())
	if err := os.WriteFile(filepath.Join(opt.ControllerDirs[0], "think.wat"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

// armed holds the next reply at its step-th update, and lets it go when
// the test ends if the test did not (a failed wait would hang the quit).
func armed(t *testing.T, g *gate, step int) *hold {
	h := g.arm(step)
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
	})
	return h
}

// TestThinking: the thinking streams apart from the answer, never
// showing a piece of a tag; once it has ended it folds to one line,
// which ctrl+o unfolds. /think says and switches the setting; the
// session keeps it and the reply with its think block, and a resumed
// chat shows them again.
func TestThinking(t *testing.T) {
	opt := thinkingOptions(t)
	var g gate
	c := startChat(t, opt, g.pace)
	c.loaded()
	c.typeLine("/think")
	c.wait("the state", func(s snapshot) bool {
		return s.notice == "thinking on (the model's default) (/think on|off switches it)"
	})
	c.typeLine("/controller think")
	c.wait("think", func(s snapshot) bool { return s.controller == "think" })

	h := armed(t, &g, 9)
	c.typeLine("hi")
	h.waitHeld(t)
	s := c.wait("the thinking", func(s snapshot) bool { return strings.Contains(plain(s.screen), "thinking…") })
	if screen := plain(s.screen); strings.Contains(screen, "<") || strings.Contains(screen, "think>") || strings.Contains(screen, "Hello") {
		t.Errorf("while thinking, the screen shows a tag or the answer:\n%s", screen)
	}
	close(h.release)
	s = c.idle()
	if s.last != thinkingReply {
		t.Fatalf("the reply is %q, want %q", s.last, thinkingReply)
	}
	t.Run("folded", func(t *testing.T) { goldenfile.RequireEqual(t, normalize(s.screen)) })

	c.typeLine("/think off")
	c.wait("the switch", func(s snapshot) bool { return s.notice == "thinking off from the next reply" })
	c.typeLine("/show")
	c.wait("/show", func(s snapshot) bool { return strings.Contains(s.last, "thinking    off") })
	c.typeLine("/copy")
	c.wait("the copy", func(s snapshot) bool { return s.notice == "copied the last reply (16 characters) to the clipboard" })
	c.key(tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl})
	c.wait("the thinking unfolded", func(s snapshot) bool { return strings.Contains(plain(s.screen), "I should greet them back.") })
	m, screen := c.finalScreen()
	goldenfile.RequireEqual(t, screen)
	if closed, err := m.Close(); err != nil || closed.Name == "" {
		t.Fatalf("quit: %+v, %v", closed, err)
	}

	opt.Continue = true
	c = startChat(t, opt, nil)
	c.wait("the restore", func(s snapshot) bool { return strings.Contains(s.last, "restored") })
	c.idle()
	c.typeLine("/think")
	s = c.wait("the state", func(s snapshot) bool { return strings.HasPrefix(s.notice, "thinking off") })
	if screen := plain(s.screen); !strings.Contains(screen, "▸ thought · 9 words · ctrl+o shows it") || !strings.Contains(screen, "Hello there!") {
		t.Errorf("the resumed chat does not show the folded thinking and the answer:\n%s", screen)
	}
	m, _ = c.finalScreen()
	if msgs := m.chat.conv.Messages(); len(msgs) != 2 || msgs[1].Content != thinkingReply {
		t.Errorf("resumed messages %+v", msgs)
	}
}

// TestThinkOnAModelWithoutTheSwitch: /think says plainly that the
// model's template has no enable_thinking, and /think on changes
// nothing.
func TestThinkOnAModelWithoutTheSwitch(t *testing.T) {
	c := startChat(t, testOptions(t), nil)
	c.loaded()
	const want = "the chat template of tiny-f32 has no thinking switch (enable_thinking): /think changes nothing for this model"
	c.typeLine("/think")
	c.wait("the answer", func(s snapshot) bool { return s.notice == want })
	c.typeLine("/think on")
	c.wait("the refusal", func(s snapshot) bool { return s.notice == want && len(s.logs) == 1 })
	c.typeLine("/show")
	c.wait("/show", func(s snapshot) bool {
		return strings.Contains(s.last, "thinking    not switchable (the chat template has no enable_thinking)")
	})
	m, _ := c.finalScreen()
	if th := m.chat.conv.Thinking(); th != nil {
		t.Errorf("/think on set the switch to %v on a model without it", *th)
	}
}

// TestThinkingOpenedByThePrompt: with a template that writes <think> at
// the end of the prompt (DeepSeek-R1, Qwen3's thinking-only models), the
// reply has only </think>, and its start streams as the thinking, not as
// the answer.
func TestThinkingOpenedByThePrompt(t *testing.T) {
	const reply = "The user says hi.\n</think>\n\nHello!"
	opt := thinkingOptions(t)
	path := filepath.Join(opt.Model, "tokenizer_config.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	tpl := cfg["chat_template"].(string)
	const gen = `{{- '<|im_start|>assistant\n' }}`
	if !strings.Contains(tpl, gen) {
		t.Fatalf("no %s in the template", gen)
	}
	cfg["chat_template"] = strings.Replace(tpl, gen, `{{- '<|im_start|>assistant\n<think>\n' }}`, 1)
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	writeForcer(t, opt, reply)
	var g gate
	c := startChat(t, opt, g.pace)
	c.loaded()
	c.typeLine("/controller think")
	c.wait("think", func(s snapshot) bool { return s.controller == "think" })
	h := armed(t, &g, 4)
	c.typeLine("hi")
	h.waitHeld(t)
	c.wait("the reply's start as the thinking", func(s snapshot) bool {
		return strings.Contains(plain(s.screen), "thinking…\n  │ The")
	})
	close(h.release)
	s := c.idle()
	if screen := plain(s.screen); s.last != reply || !strings.Contains(screen, "▸ thought · 4 words") || !strings.Contains(screen, "  Hello!") {
		t.Errorf("reply %q; screen:\n%s", s.last, screen)
	}
}
