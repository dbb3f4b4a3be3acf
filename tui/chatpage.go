package tui

import (
	"context"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/chatopen"
	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/sessions"
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
	conv  *conversation.Conversation
	host  *controllerHost
	held  heldSession
	// used mirrors the context positions held; stats are the last
	// reply's.
	used  int
	stats *engine.Stats

	// reply is the reply being generated; busy names other work that
	// holds the conversation (a save, a load).
	reply  *replyStream
	busy   string
	nextID int
}

// newChatPage starts the chat on a loaded model: it says so, listens to
// the controllers' logs and restores the session the options name.
func newChatPage(d chatDeps, msg modelLoadedMsg) (*chatPage, tea.Cmd) {
	p := &chatPage{chatDeps: d, model: msg.model, conv: msg.conv, host: msg.host, held: heldSession{store: d.opt.Sessions}}
	p.transcript = newTranscript(d.common, msg.model.Name)
	p.input = newInput(d.common, d.hist, argNames(d.opt.Sessions, msg.host))
	p.status = newStatusBar(d.common)
	p.SetSize(d.common.Width, d.common.Height)
	p.used = p.conv.Tokens()
	p.transcript.reset(p.conv.Messages(), p.conv.OutOfView())
	p.notice.say("loaded " + p.model.Describe() + " in " + formatMillis(p.model.LoadTime))
	return p, tea.Batch(p.input.Focus(), p.host.waitLog(p.ctx.Done()), p.resume())
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
		if p.reply == nil && p.busy == "" {
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
	case controllerCompiledMsg:
		p.onControllerReady(msg)
		return nil
	case sessionSavedMsg:
		return p.afterSaved(msg)
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
		return p.host.get(chosen.value, "")
	}
	return p.runLoad(chosen.value)
}

// hasInput reports whether the input holds text.
func (p *chatPage) hasInput() bool { return p.input.Value() != "" }

// clearInput empties the input.
func (p *chatPage) clearInput() { p.input.Reset() }

// replying reports whether a reply is being generated.
func (p *chatPage) replying() bool { return p.reply != nil }

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

// onControllerReady switches to a compiled controller.
func (p *chatPage) onControllerReady(msg controllerCompiledMsg) {
	if msg.err != nil {
		p.notice.fail(msg.err)
		return
	}
	p.host.Use(msg.mod, msg.arg)
	p.held.dirty = true
	text := "controller " + msg.name + " on"
	if p.reply != nil {
		text += " from the next token"
	}
	p.notice.say(text)
}

// stopAndWait stops a running reply and waits for it to let go of the
// conversation; what it produced is kept.
func (p *chatPage) stopAndWait() {
	if p.reply != nil {
		p.reply.wait()
		p.reply, p.held.dirty = nil, true
	}
}

// close saves the conversation as a session when it changed, and frees
// it, the controllers and the model. It returns the session saved ("" when
// none was).
func (p *chatPage) close() (saved string, err error) {
	if p.held.dirty && p.hasTurns() {
		saved = p.held.nameOrNew()
		var claim *sessions.Claim
		if claim, err = p.held.claimFor(saved); err == nil {
			p.held.keep(claim)
			err = p.conv.Save(claim)
		}
		if err != nil {
			saved = ""
		}
	}
	p.held.keep(nil)
	p.conv.Close()
	p.host.close()
	p.model.Close()
	return saved, err
}
