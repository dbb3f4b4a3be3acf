package tui

import (
	"context"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/chatsession"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
)

// chatDeps is what the chat page gets from the root.
type chatDeps struct {
	common *Common
	notice *noticeLine
	logs   *logPane
	hist   *history
	ctx    context.Context
	opt    Options
	work   func(func() tea.Msg) tea.Cmd
	pace   func(n int)
	// switchPace, when set (tests), runs before each controller switch.
	switchPace func()
}

// chatPage is the chat once a model is loaded: the transcript, the log
// pane, the notice, the input and the status bar, with the controller,
// session and help overlays. It owns the conversation, the controller
// host and the model, and frees them in close.
type chatPage struct {
	chatDeps
	transcript transcript
	input      input
	status     statusBar
	picker     *picker
	showHelp   bool

	model *chatopen.Loaded
	// chat is the conversation bound to its session (chatsession keeps
	// the session's rules); conv is its conversation.
	chat *chatsession.Chat
	conv *conversation.Conversation
	host *controllerHost
	// used mirrors the context positions held; stats are the last
	// reply's.
	used  int
	stats *engine.Stats

	// reply is the reply being generated; busy names other work that
	// holds the conversation (a save, a load).
	reply  *replyStream
	busy   string
	nextID int
	// switching is the controller switch under way, the last one asked
	// for; queued the message that waits for it.
	switching *pendingSwitch
	switchID  int64
	queued    *queuedSend
}

// newChatPage starts the chat on a loaded model: it says so, shows the
// session it resumed, and listens to the controllers' logs.
func newChatPage(d chatDeps, msg modelLoadedMsg) (*chatPage, tea.Cmd) {
	p := &chatPage{chatDeps: d, model: msg.model, chat: msg.chat, conv: msg.chat.Conversation(), host: msg.host}
	p.host.pace = d.switchPace
	p.transcript = newTranscript(d.common, msg.model.Name)
	p.input = newInput(d.common, d.hist, argNames(d.opt.Sessions, msg.host))
	p.status = newStatusBar(d.common)
	p.SetSize(d.common.Width, d.common.Height)
	p.used = p.conv.Tokens()
	p.transcript.reset(p.conv.Messages(), p.conv.OutOfView(), p.conv.ReplyControls())
	loaded := "loaded " + p.model.Describe() + " in " + formatMillis(p.model.LoadTime)
	switch {
	case msg.openErr != nil:
		p.notice.fail(fmt.Errorf("%w; this is a new conversation", msg.openErr))
	case msg.rep.Name != "":
		p.showOpened(msg.rep, "", loaded)
	default:
		p.notice.say(loaded)
	}
	return p, tea.Batch(p.input.Focus(), p.host.waitLog(p.ctx.Done()))
}

// SetSize sizes the components: the input, the notice and the log pane
// take what they need, the transcript the rest.
func (p *chatPage) SetSize(w, h int) {
	p.input.SetSize(w)
	p.status.SetSize(w)
	p.logs.SetSize(w)
	mainH := max(h-p.logs.Height()-p.input.Height()-p.notice.Height()-2, 1)
	p.transcript.SetSize(w, mainH)
	if p.picker != nil {
		p.picker.SetSize(w, mainH)
	}
}

// restyle applies new styles.
func (p *chatPage) restyle() {
	p.transcript.restyle()
	p.input.restyle()
	if p.picker != nil {
		p.picker.restyle()
	}
}

// Update handles the keys, a reply's tokens, and the ends of the work
// that runs off the UI goroutine.
func (p *chatPage) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		return p.onKey(msg)
	case spinner.TickMsg:
		if p.reply == nil && p.busy == "" && p.switching == nil {
			return nil // idle: let the spinner stop
		}
		return p.status.Update(msg)
	case tokensArrivedMsg:
		return p.onTokens(msg)
	case replyDoneMsg:
		p.onReplyDone(msg)
		return nil
	case controllerLoggedMsg:
		return p.onLog(msg)
	case controllerSwitchedMsg:
		return p.onSwitched(msg)
	case controllersDescribedMsg:
		p.host.args = msg
		if p.picker != nil && p.picker.is(pickController) {
			p.picker.setItems(p.host.pickItems())
		}
		return nil
	case sessionSavedMsg:
		p.afterSaved(msg)
		return nil
	case chatClearedMsg:
		p.afterCleared(msg)
		return nil
	case sessionLoadedMsg:
		p.afterLoaded(msg)
		return nil
	case editorClosedMsg:
		if msg.err != nil {
			p.notice.fail(msg.err)
		} else {
			p.input.SetValue(msg.text)
		}
		return nil
	}
	if p.picker != nil {
		_, cmd := p.picker.Update(msg)
		return cmd
	}
	return p.input.Update(msg)
}

// onKey handles a key press in the chat (Ctrl+C is the root's).
func (p *chatPage) onKey(k tea.KeyPressMsg) tea.Cmd {
	keys := p.common.Keys
	if p.showHelp {
		// ?, Esc and q close the help; any other key closes it and does
		// what it does, so that nothing typed is lost.
		p.showHelp = false
		if key.Matches(k, keys.Help, keys.Back) || k.String() == "q" {
			return nil
		}
	}
	if p.picker != nil {
		return p.onPickerKey(k)
	}
	switch {
	case key.Matches(k, keys.Stop):
		p.stopReply()
		return nil
	case key.Matches(k, keys.Send):
		return p.submit()
	case key.Matches(k, keys.Tokens):
		p.transcript.toggleTokens()
		return nil
	case key.Matches(k, keys.Thinking):
		if !p.transcript.hasThinking() {
			p.notice.say("no reply here has a thinking block to show (models that think first, such as Qwen3, write one)")
			return nil
		}
		p.transcript.toggleThinking()
		return nil
	case key.Matches(k, keys.Logs):
		return p.logs.Update(k)
	case key.Matches(k, keys.Editor):
		cmd, err := editInput(p.input.Value())
		if err != nil {
			p.notice.fail(err)
		}
		return cmd
	case key.Matches(k, keys.ScrollUp, keys.ScrollDown):
		return p.transcript.Update(k)
	case key.Matches(k, keys.Help) && (p.input.Value() == "" || k.String() != "?"):
		p.showHelp = true
		return nil
	}
	return p.input.Update(k)
}

// onPickerKey drives the controller or session picker.
func (p *chatPage) onPickerKey(k tea.KeyPressMsg) tea.Cmd {
	if !p.picker.filtering() && key.Matches(k, p.common.Keys.Back) {
		p.picker = nil
		return nil
	}
	chosen, cmd := p.picker.Update(k)
	if chosen == nil {
		return cmd
	}
	controller := p.picker.is(pickController)
	p.picker = nil
	if controller {
		if arg, ok := p.host.args[chosen.value]; ok && arg.required {
			// Refused without one: the user types it after the name.
			p.input.SetValue("/controller " + chosen.value + " ")
			p.notice.say(chosen.value + " takes an argument (" + strings.TrimPrefix(arg.line, "required: ") + "): type it and press enter")
			return nil
		}
		return p.switchController(chosen.value, "")
	}
	return p.load(chosen.value)
}

// hasInput reports whether the input holds text.
func (p *chatPage) hasInput() bool { return p.input.Value() != "" }

// clearInput empties the input.
func (p *chatPage) clearInput() { p.input.Reset() }

// replying reports whether a reply is being generated, or waits for a
// controller switch.
func (p *chatPage) replying() bool { return p.reply != nil || p.queued != nil }

// modelName is the model as the user named it.
func (p *chatPage) modelName() string { return p.model.Name }

// onLog shows a controller's log line; a fault is also an error notice.
func (p *chatPage) onLog(msg controllerLoggedMsg) tea.Cmd {
	if msg.dropped > 0 {
		p.logs.add(logLine{source: "driftwood", text: thousands(int(msg.dropped)) + " log lines dropped (the controller logs faster than they can be shown)"})
	}
	p.logs.add(logLine{source: msg.Controller, text: msg.Text, fault: msg.Fault})
	if msg.Fault {
		p.notice.warn("controller " + msg.Controller + ": " + msg.Text)
	}
	return p.host.waitLog(p.ctx.Done())
}

// stopAndWait stops a running reply and waits for it to let go of the
// conversation; what it produced is kept.
func (p *chatPage) stopAndWait() {
	if p.reply != nil {
		p.reply.wait()
		p.reply = nil
	}
}

// close saves the chat to its session when it changed, releases the
// session, and frees the conversation, the controllers and the model.
func (p *chatPage) close() (chatsession.Closed, error) {
	closed, err := p.chat.Close()
	p.conv.Close()
	p.host.close()
	p.model.Close()
	return closed, err
}
