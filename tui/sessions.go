package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// afterSave is what a save was made for.
type afterSave int

const (
	afterNothing afterSave = iota
	afterNew               // then start a new conversation
	afterLoad              // then load another session
)

// sessionSavedMsg ends a save.
type sessionSavedMsg struct {
	name   string
	claim  *sessions.Claim // the claim saved under
	tokens int
	err    error
	then   afterSave
	next   string // the session to load after the save
}

// sessionLoadedMsg ends a session load. On err the conversation is as it
// was.
type sessionLoadedMsg struct {
	name   string
	claim  *sessions.Claim // the claim loaded under
	tokens int
	took   time.Duration
	// fallback says why the model state could not be restored (the
	// transcript was taken and the next reply re-processes it).
	fallback error
	// controller is the session's controller; controllerErr says why it
	// could not be switched on.
	controller    string
	controllerErr error
	err           error
}

// hasTurns reports whether the conversation has anything worth saving.
func (p *chatPage) hasTurns() bool {
	for _, msg := range p.conv.Messages() {
		if msg.Role != "system" {
			return true
		}
	}
	return false
}

// save writes the conversation as session name, off the UI goroutine.
func (p *chatPage) save(name string, then afterSave, next string) tea.Cmd {
	claim, err := p.held.claimFor(name)
	if err != nil {
		p.notice.fail(err)
		return nil
	}
	if !p.held.owns(claim) && claim.Exists() {
		// Another conversation's session: saving would replace it.
		claim.Release()
		p.notice.fail(fmt.Errorf("session %q already exists: /load it, or save under another name", name))
		return nil
	}
	p.busy = "saving " + name
	conv := p.conv
	return tea.Batch(p.work(func() tea.Msg {
		err := conv.Save(claim)
		return sessionSavedMsg{name: name, claim: claim, tokens: conv.Tokens(), err: err, then: then, next: next}
	}), p.status.Tick())
}

// saveThen saves a changed conversation before replacing it; an unchanged
// one is replaced at once.
func (p *chatPage) saveThen(then afterSave, next string) tea.Cmd {
	if p.held.dirty && p.hasTurns() {
		return p.save(p.held.nameOrNew(), then, next)
	}
	return p.afterSaved(sessionSavedMsg{then: then, next: next})
}

// afterSaved handles the end of a save.
func (p *chatPage) afterSaved(msg sessionSavedMsg) tea.Cmd {
	p.busy = ""
	if msg.err != nil {
		p.held.drop(msg.claim)
		p.notice.fail(msg.err)
		return nil
	}
	saved := ""
	if msg.name != "" {
		p.held.take(msg.name, msg.claim)
		saved = fmt.Sprintf("saved session %s (%s tokens)", msg.name, thousands(msg.tokens))
	}
	switch msg.then {
	case afterNew:
		p.conv.Clear()
		p.held.take("", nil)
		p.used = p.conv.Tokens()
		p.transcript.reset(p.conv.Messages(), p.conv.OutOfView())
		p.notice.say(join("new conversation", saved))
	case afterLoad:
		p.notice.say(saved)
		return p.loadSession(msg.next)
	default:
		p.notice.say(saved)
	}
	return nil
}

// loadSession restores a session into the conversation, off the UI
// goroutine.
func (p *chatPage) loadSession(name string) tea.Cmd {
	claim, err := p.held.claimFor(name)
	if err != nil {
		p.notice.fail(err)
		return nil
	}
	p.busy = "loading " + name
	conv, host := p.conv, p.host
	return tea.Batch(p.work(func() tea.Msg {
		msg := restoreSession(conv, host, claim)
		msg.claim = claim
		return msg
	}), p.status.Tick())
}

// restoreSession restores session name: the model state when the session
// was made with this model, else the transcript alone; and the session's
// controller.
func restoreSession(conv *conversation.Conversation, host *controllerHost, claim *sessions.Claim) sessionLoadedMsg {
	start := time.Now()
	name := claim.Name()
	snap, err := claim.Open()
	if err != nil {
		return sessionLoadedMsg{name: name, err: err}
	}
	defer snap.Close()
	msg := sessionLoadedMsg{name: name}
	if err := conv.Restore(snap); err != nil {
		if err := conv.RestoreTranscript(snap.Meta); err != nil {
			return sessionLoadedMsg{name: name, err: err}
		}
		msg.fallback = err
	}
	msg.took, msg.tokens = time.Since(start), conv.Tokens()
	if snap.Meta.Controller == nil {
		host.Off()
		return msg
	}
	res := conv.ResumeController()
	msg.controller, msg.controllerErr = res.Name, res.Err
	switch {
	case res.Err != nil:
		msg.controllerErr = fmt.Errorf("%w; the session keeps it and its state until another controller replaces it", res.Err)
	case res.Changed:
		msg.controllerErr = fmt.Errorf("%s changed since the session was saved; using the current build", res.Name)
	}
	return msg
}

// afterLoaded handles the end of a session load.
func (p *chatPage) afterLoaded(msg sessionLoadedMsg) {
	p.busy = ""
	if msg.err != nil {
		p.held.drop(msg.claim)
		p.notice.fail(msg.err)
		return
	}
	p.held.take(msg.name, msg.claim)
	p.used = msg.tokens
	p.transcript.reset(p.conv.Messages(), p.conv.OutOfView())
	text := fmt.Sprintf("session %s: restored %s tokens in %s", msg.name, thousands(msg.tokens), formatMillis(msg.took))
	if msg.fallback != nil {
		text = fmt.Sprintf("session %s: %v\nThe transcript is back; the next message re-processes it (slower, nothing is lost).", msg.name, msg.fallback)
	}
	if msg.controller != "" && msg.controllerErr == nil {
		text += "\ncontroller " + msg.controller + " is back on"
	}
	p.transcript.add(entryInfo, text)
	p.notice.say(join(p.notice.Text(), strings.SplitN(text, "\n", 2)[0]))
	if msg.controllerErr != nil {
		p.notice.fail(fmt.Errorf("the session's controller %s: %w", msg.controller, msg.controllerErr))
	}
}

// sessionItems lists the saved sessions for the picker.
func sessionItems(store sessions.Store) ([]pickItem, error) {
	list, err := store.List()
	var items []pickItem
	for _, s := range list {
		desc := fmt.Sprintf("%d turns · %s tokens · %s · %s", s.Turns, thousands(s.Tokens), s.Model, s.Updated.Local().Format("2006-01-02 15:04"))
		if s.Err != nil {
			desc = "unreadable: " + s.Err.Error()
		}
		items = append(items, pickItem{title: s.Name, desc: desc, value: s.Name})
	}
	return items, err
}

// formatMillis writes a duration for people: 0.4 ms, 40 ms, 2.3 s.
func formatMillis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

// join joins the non-empty parts with " · ".
func join(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, " · ")
}

// resume restores the session the options name, if any.
func (p *chatPage) resume() tea.Cmd {
	name := p.opt.Session
	if p.opt.Continue {
		latest, err := p.opt.Sessions.Latest()
		if err != nil {
			p.notice.say(err.Error() + ": starting a new conversation")
			return nil
		}
		name = latest
	}
	if name == "" {
		return nil
	}
	claim, err := p.opt.Sessions.Claim(name)
	if err != nil {
		p.notice.fail(err)
		return nil
	}
	if !claim.Exists() {
		p.held.keep(claim)
		p.held.name = name
		p.notice.say("new session " + name)
		return nil
	}
	claim.Release() // loadSession takes it again, and keeps it if the load works
	return p.loadSession(name)
}
