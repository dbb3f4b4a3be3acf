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

// sessionName is the name the conversation saves under, made up from
// the time for a conversation never saved (with a suffix when another
// session has that name already).
func (m *Model) sessionName() string {
	if m.session == "" {
		base := "chat-" + time.Now().Format("20060102-150405")
		m.session = base
		for i := 2; m.opt.Sessions.Exists(m.session); i++ {
			m.session = fmt.Sprintf("%s-%d", base, i)
		}
	}
	return m.session
}

// hasTurns reports whether the conversation has anything worth saving.
func (m *Model) hasTurns() bool {
	for _, msg := range m.conv.Messages() {
		if msg.Role != "system" {
			return true
		}
	}
	return false
}

// claimFor returns the claim on session name: the conversation's own
// when it is that session, else a new one (an error when another process
// holds it).
func (m *Model) claimFor(name string) (*sessions.Claim, error) {
	if m.claim != nil && m.claim.Name() == name {
		return m.claim, nil
	}
	return m.opt.Sessions.Claim(name)
}

// keepClaim makes c the conversation's claim, releasing the one it had.
func (m *Model) keepClaim(c *sessions.Claim) {
	if c != m.claim {
		m.claim.Release()
		m.claim = c
	}
}

// dropClaim releases c unless it is the conversation's claim.
func (m *Model) dropClaim(c *sessions.Claim) {
	if c != m.claim {
		c.Release()
	}
}

// save writes the conversation as session name, off the UI goroutine.
func (m *Model) save(name string, then afterSave, next string) tea.Cmd {
	claim, err := m.claimFor(name)
	if err != nil {
		m.fail(err)
		return nil
	}
	if claim != m.claim && claim.Exists() {
		// Another conversation's session: saving would replace it.
		claim.Release()
		m.fail(fmt.Errorf("session %q already exists: /load it, or save under another name", name))
		return nil
	}
	m.busy = "saving " + name
	conv := m.conv
	return tea.Batch(m.work(func() tea.Msg {
		err := conv.Save(claim)
		return sessionSavedMsg{name: name, claim: claim, tokens: conv.Tokens(), err: err, then: then, next: next}
	}), m.status.Tick())
}

// saveThen saves a changed conversation before replacing it; an unchanged
// one is replaced at once.
func (m *Model) saveThen(then afterSave, next string) tea.Cmd {
	if m.dirty && m.hasTurns() {
		return m.save(m.sessionName(), then, next)
	}
	return m.afterSaved(sessionSavedMsg{then: then, next: next})
}

// afterSaved handles the end of a save.
func (m *Model) afterSaved(msg sessionSavedMsg) tea.Cmd {
	m.busy = ""
	if msg.err != nil {
		m.dropClaim(msg.claim)
		m.fail(msg.err)
		return nil
	}
	saved := ""
	if msg.name != "" {
		m.keepClaim(msg.claim)
		m.session, m.dirty = msg.name, false
		saved = fmt.Sprintf("saved session %s (%s tokens)", msg.name, thousands(msg.tokens))
	}
	switch msg.then {
	case afterNew:
		m.conv.Clear()
		m.keepClaim(nil)
		m.session, m.dirty, m.used = "", false, m.conv.Tokens()
		m.transcript.reset(m.conv.Messages())
		m.say(join("new conversation", saved))
	case afterLoad:
		m.say(saved)
		return m.loadSession(msg.next)
	default:
		m.say(saved)
	}
	return nil
}

// loadSession restores a session into the conversation, off the UI
// goroutine.
func (m *Model) loadSession(name string) tea.Cmd {
	claim, err := m.claimFor(name)
	if err != nil {
		m.fail(err)
		return nil
	}
	m.busy = "loading " + name
	conv, host := m.conv, m.host
	return tea.Batch(m.work(func() tea.Msg {
		msg := restoreSession(conv, host, claim)
		msg.claim = claim
		return msg
	}), m.status.Tick())
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
		host.Driver.Off()
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
func (m *Model) afterLoaded(msg sessionLoadedMsg) {
	m.busy = ""
	if msg.err != nil {
		m.dropClaim(msg.claim)
		m.fail(msg.err)
		return
	}
	m.keepClaim(msg.claim)
	m.session, m.dirty, m.used = msg.name, false, msg.tokens
	m.transcript.reset(m.conv.Messages())
	text := fmt.Sprintf("session %s: restored %s tokens in %s", msg.name, thousands(msg.tokens), formatMillis(msg.took))
	if msg.fallback != nil {
		text = fmt.Sprintf("session %s: %v\nThe transcript is back; the next message re-processes it (slower, nothing is lost).", msg.name, msg.fallback)
	}
	if msg.controller != "" && msg.controllerErr == nil {
		text += "\ncontroller " + msg.controller + " is back on"
	}
	m.transcript.add(entryInfo, text)
	m.say(join(m.notice, strings.SplitN(text, "\n", 2)[0]))
	if msg.controllerErr != nil {
		m.fail(fmt.Errorf("the session's controller %s: %w", msg.controller, msg.controllerErr))
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
