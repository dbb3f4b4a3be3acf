package tui

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/engine/chat"
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

// chatView are the components of the chat page that its flows (replies,
// controllers, sessions) write to.
type chatView struct {
	notice     *noticeLine
	logs       *logPane
	transcript *transcript
	input      *input
	status     *statusBar
}

// takeBack undoes a message the conversation did not take (refused, or
// left waiting for a controller switch): the transcript drops it and its
// reply, and its text goes back into the input when that is empty. Text
// "" is a regeneration: the reply it was to replace comes back from
// msgs.
func (v chatView) takeBack(text string, msgs []chat.Message) {
	v.transcript.unsend(text != "", msgs)
	if text != "" && v.input.Value() == "" {
		v.input.SetValue(text)
	}
}

// chatParts are the chat's state and the components that own the rest of
// it. The page lays them out and routes its messages to them; a slash
// command's handler gets them, and nothing else of the page.
type chatParts struct {
	*chatState
	chatView
	replies  *replies
	ctrl     *controllerFlow
	sessions *sessionFlow
	// picker is the controller or session picker shown over the
	// transcript (nil: none).
	picker *picker
}

// chatPage is the chat once a model is loaded: the transcript, the log
// pane, the notice, the input and the status bar, with the controller,
// session and help overlays. It owns the chat's state and frees it in
// close.
type chatPage struct {
	chatParts
	common   *Common
	showHelp bool
}

// newChatPage starts the chat on a loaded model: it says so, shows the
// session it resumed, and listens to the controllers' logs.
func newChatPage(d chatDeps, msg modelLoadedMsg) (*chatPage, tea.Cmd) {
	st := &chatState{model: msg.model, chat: msg.chat, conv: msg.chat.Conversation(), host: msg.host}
	st.host.pace = d.switchPace
	tr := newTranscript(d.common, msg.model.Name)
	in := newInput(d.common, d.hist, argNames(d.opt.Sessions, msg.host))
	status := newStatusBar(d.common)
	v := chatView{notice: d.notice, logs: d.logs, transcript: &tr, input: &in, status: &status}
	r := &replies{chatState: st, chatView: v, ctx: d.ctx, pace: d.pace}
	p := &chatPage{common: d.common, chatParts: chatParts{chatState: st, chatView: v, replies: r,
		ctrl:     &controllerFlow{chatState: st, chatView: v, common: d.common, ctx: d.ctx, dirs: d.opt.ControllerDirs, work: d.work, replies: r},
		sessions: &sessionFlow{chatState: st, chatView: v, common: d.common, opt: d.opt, work: d.work},
	}}
	p.SetSize(d.common.Width, d.common.Height)
	p.used = p.conv.Tokens()
	p.transcript.reset(p.conv.Messages(), p.conv.OutOfView(), p.conv.ReplyControls())
	loaded := "loaded " + p.model.Describe() + " in " + formatMillis(p.model.LoadTime)
	switch {
	case msg.openErr != nil:
		p.notice.fail(fmt.Errorf("%w; this is a new conversation", msg.openErr))
	case msg.rep.Name != "":
		p.sessions.showOpened(msg.rep, "", loaded)
	default:
		p.notice.say(loaded)
	}
	return p, tea.Batch(p.input.Focus(), p.ctrl.listen())
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

// Update handles the keys and passes the ends of the work that runs off
// the UI goroutine to the components that started it.
func (p *chatPage) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		return p.onKey(msg)
	case spinner.TickMsg:
		if p.replies.stream == nil && p.sessions.busy == "" && p.ctrl.switching == nil {
			return nil // idle: let the spinner stop
		}
		return p.status.Update(msg)
	case tokensArrivedMsg, replyDoneMsg:
		return p.replies.Update(msg)
	case controllerLoggedMsg, controllerSwitchedMsg:
		return p.ctrl.Update(msg)
	case sessionSavedMsg, chatClearedMsg, sessionLoadedMsg:
		return p.sessions.Update(msg)
	case controllersDescribedMsg:
		p.host.args = msg
		if p.picker != nil && p.picker.is(pickController) {
			p.picker.setItems(p.host.pickItems())
		}
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
		return p.ctrl.choose(chosen.value)
	}
	return p.sessions.load(chosen.value)
}

// submit sends the input: a slash command, or a message to the model.
func (p *chatPage) submit() tea.Cmd {
	text := strings.TrimSpace(p.input.Value())
	if text == "" {
		return nil
	}
	var c command
	isCmd := isCommand(text)
	if isCmd {
		var err error
		if c, err = parseCommand(text); err != nil {
			p.notice.fail(err)
			return nil
		}
	}
	if err := p.busyError(); err != nil && !c.spec.whileReplying {
		p.notice.fail(err)
		return nil
	}
	if err := p.input.Remember(text); err != nil {
		p.notice.fail(fmt.Errorf("history not saved: %w", err))
	}
	p.input.Reset()
	p.notice.say("")
	if isCmd {
		return c.spec.run(&p.chatParts, c)
	}
	if strings.HasPrefix(text, "//") {
		text = text[1:] // "//" sends a message that starts with "/"
	}
	p.transcript.add(entryUser, text)
	p.transcript.beginReply(p.opensThinking())
	return p.ctrl.send(&queuedSend{text: text})
}

// busyError says why the conversation cannot be used right now, or nil.
func (p *chatPage) busyError() error {
	switch {
	case p.replies.stream != nil:
		return errors.New("a reply is being generated: wait, or press esc to stop it")
	case p.ctrl.queued != nil:
		return errors.New("a message is waiting for " + p.ctrl.pendingName() + ": wait, or press esc to take it back")
	case p.sessions.busy != "":
		return errors.New("busy " + p.sessions.busy + "…")
	}
	return nil
}

// hasInput reports whether the input holds text.
func (p *chatPage) hasInput() bool { return p.input.Value() != "" }

// clearInput empties the input.
func (p *chatPage) clearInput() { p.input.Reset() }

// replying reports whether a reply is being generated, or waits for a
// controller switch.
func (p *chatPage) replying() bool { return p.replies.stream != nil || p.ctrl.queued != nil }

// stopReply asks the running reply to stop (what it produced is kept),
// or takes back the message that waits for a controller switch.
func (p *chatPage) stopReply() {
	if !p.ctrl.unqueue() {
		p.replies.stop()
	}
}

// stopAndWait stops a running reply and waits for it to let go of the
// conversation; what it produced is kept.
func (p *chatPage) stopAndWait() { p.replies.wait() }

// View is the transcript (or an overlay), the log pane, the notice, the
// input, the hint line and the status bar.
func (p *chatPage) View() string {
	main := p.transcript.View()
	switch {
	case p.showHelp:
		main = p.helpView()
	case p.picker != nil:
		main = p.picker.View()
	}
	parts := []string{fit(main, p.transcript.Height())}
	if v := p.logs.View(); v != "" {
		parts = append(parts, v)
	}
	parts = append(parts, p.notice.View(), p.input.View(), p.input.HintView(), p.status.View(p.statusInfo()))
	return strings.Join(parts, "\n")
}

// statusInfo gathers what the status bar shows.
func (p *chatPage) statusInfo() statusInfo {
	in := statusInfo{model: p.model.Name, backend: p.model.Backend.Name(), used: p.used, window: p.conv.Window(), compactsAt: p.conv.CompactsAt(), unreadLogs: p.logs.Unread()}
	if mod, arg := p.host.Current(); mod != nil {
		in.controller, in.arg = mod.Name, arg
	}
	if p.stats != nil {
		in.rate = p.stats.GenRate()
	}
	switch {
	case p.replies.stream != nil:
		in.activity, in.tokens = p.replies.stream.activity()
	case p.sessions.busy != "":
		in.activity = p.sessions.busy
	default:
		in.activity = p.ctrl.activity()
	}
	return in
}

// helpView lists the keys and the commands.
func (p *chatPage) helpView() string {
	st := p.common.Styles
	return strings.Join([]string{
		st.Title.Render("Keys") + st.Subtle.Render("  (? or esc closes)"),
		p.input.FullHelp(p.common.Keys),
		"",
		st.Title.Render("Commands"),
		st.Subtle.Render(hangWrap(commandsText(), p.common.Width, commandHang)),
	}, "\n")
}
