package tui

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/driftwoodlabs/driftwood/config"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/hub"
	"github.com/driftwoodlabs/driftwood/internal/golden"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// Test controllers in WAT, after controllers/host_test.go: a bump
// allocator, a result record at 1024, a mask at 2048.
const watPrelude = `
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 8192))
  (global $steps (mut i32) (i32.const 0))
  (func (export "dw_abi_version") (result i32) (i32.const 2))
  (func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))
  (func (export "dw_alloc") (param $n i32) (result i32)
    (local $p i32)
    (local.set $p (global.get $heap))
    (global.set $heap (i32.and (i32.add (i32.add (local.get $p) (local.get $n)) (i32.const 7)) (i32.const -8)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then (drop (memory.grow (i32.add (i32.shr_u (global.get $heap) (i32.const 16)) (i32.const 1))))))
    (local.get $p))
  (func (export "dw_begin") (param i32 i32) (result i32) (i32.const 0))`

// testControllers are the controllers the chat tests switch between.
func testControllers() map[string]string {
	return map[string]string{
		// abc allows only "A", "B" and "C" (ids 32-34: bits 0-2 of word 1)
		// and logs a line when it starts.
		"abc": `(module
  (import "driftwood" "log" (func $log (param i32 i32)))` + watPrelude + `
  (data (i32.const 700) "abc is on")
  (data (i32.const 1024) "\01\00\00\00\00\08\00\00")
  (data (i32.const 2052) "\07")
  (func (export "dw_init") (param i32 i32) (result i32)
    (call $log (i32.const 700) (i32.const 9)) (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32) (i32.const 1024)))`,
		// bang forces "!" (id 0) and allows only "!" after it, four steps
		// (eight tokens), then stops the reply.
		"bang": `(module` + watPrelude + `
  (data (i32.const 1024) "\09\00\00\00\00\08\00\00\00\00\00\00\00\10\00\00\01\00\00\00")
  (data (i32.const 1056) "\02\00\00\00")
  (data (i32.const 2048) "\01")
  (data (i32.const 4096) "\00\00\00\00")
  (func (export "dw_init") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32)
    (global.set $steps (i32.add (global.get $steps) (i32.const 1)))
    (if (result i32) (i32.le_u (global.get $steps) (i32.const 4))
      (then (i32.const 1024)) (else (i32.const 1056)))))`,
		// needy says it needs an argument, a word.
		"needy": `(module` + watPrelude + `
  (data (i32.const 3000) "\01\00\00\00\c8\0b\00\00\06\00\00\00")
  (data (i32.const 3016) "a word")
  (func (export "dw_describe") (result i32) (i32.const 3000))
  (func (export "dw_init") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32) (i32.const 0)))`,
		// picky refuses every argument at its start.
		"picky": `(module` + watPrelude + `
  (func (export "dw_init") (param i32 i32) (result i32) (i32.const 1))
  (func (export "dw_step") (param i32 i32) (result i32) (i32.const 0)))`,
		// trap faults at its first step.
		"trap": `(module` + watPrelude + `
  (func (export "dw_init") (param i32 i32) (result i32) (i32.const 0))
  (func (export "dw_step") (param i32 i32) (result i32)
    (global.set $steps (i32.add (global.get $steps) (i32.const 1)))
    (if (i32.eq (global.get $steps) (i32.const 1)) (then unreachable))
    (i32.const 0)))`,
	}
}

// testOptions runs the chat on tiny-f32, greedy, 24 tokens a reply, with
// its folders in a temporary directory and the test controllers.
func testOptions(t *testing.T) Options {
	t.Helper()
	dir := t.TempDir()
	ctrl := filepath.Join(dir, "controllers")
	if err := os.MkdirAll(ctrl, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range testControllers() {
		if err := os.WriteFile(filepath.Join(ctrl, name+".wat"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default()
	cfg.Threads, cfg.Context, cfg.MaxTokens = 1, 512, 24
	cfg.Sampling = engine.SamplerConfig{TopP: 1, RepeatPenalty: 1}
	h := hub.Options{CacheDir: filepath.Join(dir, "hf"), Offline: true, OllamaDir: filepath.Join(dir, "ollama"), LMStudioDir: filepath.Join(dir, "lmstudio")}
	return Options{
		Model:          golden.ModelDir("tiny-f32"),
		Config:         cfg,
		Sessions:       sessions.Store{Dir: filepath.Join(dir, "sessions")},
		ControllerDirs: []string{ctrl},
		HistoryFile:    filepath.Join(dir, "history"),
		Hub:            &h,
	}
}

// snapshot is what a test sees of the model, taken on the program's
// goroutine.
type snapshot struct {
	screen string
	// chat is set once the chat page is shown; until then state is the
	// model page's screen.
	chat       bool
	state      modelState
	replying   bool
	stopping   bool
	queued     bool
	switching  bool
	busy       string
	notice     string
	controller string
	picker     bool
	help       bool
	input      string
	used       int
	// started counts the replies begun: a short reply can start and end
	// between two polls, so that replying is never seen.
	started int
	// last is the text of the transcript's last entry; logs the log
	// pane's lines.
	last string
	logs []logLine
	// messages counts the conversation's messages (-1 while a reply, a
	// save or a load holds the conversation).
	messages int
}

// probe takes snapshots through the program's message filter, which runs
// on the program's goroutine before each message.
type probe struct {
	mu   sync.Mutex
	snap snapshot
}

func (p *probe) filter(tm tea.Model, msg tea.Msg) tea.Msg {
	m, ok := tm.(*App)
	if !ok {
		return msg
	}
	s := snapshot{screen: m.View().Content, state: m.models.state, notice: m.notice.Text(), input: m.models.input.Value(), messages: -1}
	s.logs = append([]logLine(nil), m.logs.lines...)
	if c := m.chat; c != nil {
		s.chat, s.replying, s.busy, s.picker, s.help, s.input, s.used = true, c.replies.stream != nil, c.sessions.busy, c.picker != nil, c.showHelp, c.input.Value(), c.used
		s.stopping = c.replies.stream != nil && c.replies.stream.stopping
		s.started = c.replies.nextID
		s.queued = c.ctrl.queued != nil
		s.switching = c.ctrl.switching != nil
		if n := len(c.transcript.entries); n > 0 {
			s.last = c.transcript.entries[n-1].text
		}
		if mod, _ := c.host.Current(); mod != nil {
			s.controller = mod.Name
		}
		if c.replies.stream == nil && c.sessions.busy == "" {
			s.messages = len(c.conv.Messages())
		}
	} else {
		s.picker = m.models.picker != nil
	}
	p.mu.Lock()
	p.snap = s
	p.mu.Unlock()
	return msg
}

func (p *probe) get() snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snap
}

// pollRequestedMsg makes the program run its filter.
type pollRequestedMsg struct{}

// session is a running test program.
type session struct {
	t     *testing.T
	m     *App
	tm    *teatest.TestModel
	probe *probe
}

// startChat runs the chat in an 80×24 terminal with the ASCII colour
// profile.
func startChat(t *testing.T, opt Options, pace func(int)) *session {
	t.Helper()
	return startChatWith(t, opt, func(m *App) { m.pace = pace })
}

// startChatWith is startChat with the test hooks that setup sets.
func startChatWith(t *testing.T, opt Options, setup func(*App)) *session {
	t.Helper()
	m := New(context.Background(), opt)
	setup(m)
	p := &probe{}
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii), tea.WithFilter(p.filter)))
	c := &session{t: t, m: m, tm: tm, probe: p}
	t.Cleanup(func() {
		tm.Quit()
		tm.WaitFinished(t, teatest.WithFinalTimeout(10*time.Second))
		m.Close()
	})
	return c
}

// wait waits until cond holds.
func (c *session) wait(what string, cond func(snapshot) bool) snapshot {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c.tm.Send(pollRequestedMsg{})
		time.Sleep(10 * time.Millisecond)
		if s := c.probe.get(); cond(s) {
			return s
		}
	}
	c.t.Fatalf("timed out waiting for %s; screen:\n%s", what, plain(c.probe.get().screen))
	return snapshot{}
}

// idle waits until no reply, switch, save or load is running (a
// message waiting for a switch is not idle: its reply is still to come).
func (c *session) idle() snapshot {
	c.t.Helper()
	return c.wait("the chat to be idle", func(s snapshot) bool {
		return s.chat && !s.replying && !s.queued && !s.switching && s.busy == "" && s.messages >= 0
	})
}

// loaded waits for the model.
func (c *session) loaded() snapshot {
	c.t.Helper()
	return c.wait("the model", func(s snapshot) bool { return s.chat })
}

// typeLine types text and presses Enter.
func (c *session) typeLine(text string) {
	c.tm.Type(text)
	c.key(tea.KeyPressMsg{Code: tea.KeyEnter})
}

// key presses a key.
func (c *session) key(k tea.KeyPressMsg) { c.tm.Send(k) }

var (
	ctrlC = tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	esc   = tea.KeyPressMsg{Code: tea.KeyEscape}
	enter = tea.KeyPressMsg{Code: tea.KeyEnter}
)

// finalScreen quits with the Ctrl+C ladder and returns the last screen.
func (c *session) finalScreen() (*App, string) {
	c.t.Helper()
	c.key(ctrlC)
	c.wait("the quit notice", func(s snapshot) bool { return strings.HasPrefix(s.notice, quitNotice) })
	c.key(ctrlC)
	m := c.tm.FinalModel(c.t, teatest.WithFinalTimeout(10*time.Second)).(*App)
	return m, normalize(m.View().Content)
}

// gate holds a reply at a chosen update, so that a test can act at a
// known token.
type gate struct {
	mu   sync.Mutex
	hold *hold
}

type hold struct {
	step             int
	reached, release chan struct{}
}

// arm holds the next reply at its step-th update.
func (g *gate) arm(step int) *hold {
	h := &hold{step: step, reached: make(chan struct{}), release: make(chan struct{})}
	g.mu.Lock()
	g.hold = h
	g.mu.Unlock()
	return h
}

// armSwitch holds the next controller switch before it starts.
func (g *gate) armSwitch() *hold { return g.arm(0) }

// switchPace is the controller host's pace hook.
func (g *gate) switchPace() { g.pace(0) }

// pace is the model's pace hook.
func (g *gate) pace(n int) {
	g.mu.Lock()
	h := g.hold
	if h == nil || n != h.step {
		g.mu.Unlock()
		return
	}
	g.hold = nil
	g.mu.Unlock()
	close(h.reached)
	<-h.release
}

// waitHeld waits until the reply is held.
func (h *hold) waitHeld(t *testing.T) {
	t.Helper()
	select {
	case <-h.reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the reply never reached the gate")
	}
}

// plain is a screen without styles and trailing spaces.
func plain(screen string) string {
	lines := strings.Split(ansi.Strip(screen), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

// Timings, and the session names made from the time, vary from run to
// run.
var (
	rateRE   = regexp.MustCompile(` +[0-9.]+ tok/s`)
	millisRE = regexp.MustCompile(`in [0-9.]+ m?s`)
	madeUpRE = regexp.MustCompile(`chat-[0-9]{8}-[0-9]{6}(-[0-9]+)?`)
)

// normalize is plain with the timings replaced by "~", and the made-up
// session names by chat-~.
func normalize(screen string) string {
	s := rateRE.ReplaceAllString(plain(screen), " ~ tok/s")
	s = madeUpRE.ReplaceAllString(s, "chat-~")
	return millisRE.ReplaceAllString(s, "in ~ ms")
}
