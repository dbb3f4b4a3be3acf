package tui

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/chatsession"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// The chat's session rules live in chatsession; these commands run them
// off the UI goroutine and show what they did.

// sessionSavedMsg ends a /save.
type sessionSavedMsg struct {
	name   string
	tokens int
	err    error
}

// chatClearedMsg ends a /new; saved is the session the old chat was
// saved as ("" when it had nothing new).
type chatClearedMsg struct {
	saved string
	err   error
}

// sessionLoadedMsg ends a /load in place. On err the chat is as it was.
type sessionLoadedMsg struct {
	saved string // the chat saved before the load
	rep   chatsession.Report
	// note says why the session's own model was not opened.
	note string
	err  error
}

// sessionModelMsg asks the root to open the session's own model, which is
// not the one loaded, and to resume the session on it; the chat was saved
// (as saved).
type sessionModelMsg struct {
	saved  string
	target chatsession.Target
	model  sessions.ModelSource
}

// save writes the chat to its session (name "": the one it has, named
// after the time when new), off the UI goroutine.
func (p *chatPage) save(name string) tea.Cmd {
	chat := p.chat
	if name == "" && !chat.Changed() {
		if n := chat.Name(); n != "" {
			p.notice.say("session " + n + " is up to date")
		} else {
			p.notice.say("nothing to save yet")
		}
		return nil
	}
	p.busy = "saving"
	conv := p.conv
	return tea.Batch(p.work(func() tea.Msg {
		var err error
		if name == "" {
			name, err = chat.Save()
		} else {
			err = chat.SaveAs(name)
		}
		return sessionSavedMsg{name: name, tokens: conv.Tokens(), err: err}
	}), p.status.Tick())
}

// afterSaved shows the end of a /save.
func (p *chatPage) afterSaved(msg sessionSavedMsg) {
	p.busy = ""
	if msg.err != nil {
		p.notice.fail(msg.err)
		return
	}
	p.notice.say(fmt.Sprintf("saved session %s (%s tokens)", msg.name, thousands(msg.tokens)))
}

// clear saves the chat and starts a new one, off the UI goroutine.
func (p *chatPage) clear() tea.Cmd {
	p.busy = "starting anew"
	chat := p.chat
	return tea.Batch(p.work(func() tea.Msg {
		saved, err := chat.Clear()
		return chatClearedMsg{saved: saved, err: err}
	}), p.status.Tick())
}

// afterCleared shows the new conversation.
func (p *chatPage) afterCleared(msg chatClearedMsg) {
	p.busy = ""
	if msg.err != nil {
		p.notice.fail(fmt.Errorf("the conversation was not saved, so it stays: %w", msg.err))
		return
	}
	p.used = p.conv.Tokens()
	p.transcript.reset(p.conv.Messages(), p.conv.OutOfView(), p.conv.ReplyControls())
	p.notice.say(join("new conversation", savedAs(msg.saved)))
}

// savedAs says that the chat was saved as session name ("" for nothing).
func savedAs(name string) string {
	if name == "" {
		return ""
	}
	return "saved session " + name
}

// load resumes session name, off the UI goroutine: in place when it was
// made with this model (or its model is not here), else on its own model
// (sessionModelMsg). The chat is saved first.
func (p *chatPage) load(name string) tea.Cmd {
	if _, err := p.opt.Sessions.Path(name); err != nil {
		p.notice.fail(err)
		return nil
	}
	p.busy = "loading " + name
	chat, store, fingerprint, opt := p.chat, p.opt.Sessions, p.model.Weights.Fingerprint, p.opt
	return tea.Batch(p.work(func() tea.Msg {
		target, err := chatsession.Find(store, name, false)
		if err == nil && !target.Exists {
			err = fmt.Errorf("no session %q in %s (/sessions lists them)", name, store.Dir)
		}
		if err != nil {
			return sessionLoadedMsg{err: err}
		}
		note := ""
		if src, ok := target.Model(); ok && !target.MadeWith(fingerprint) {
			if err := modelHere(src.Name(), opt); err == nil {
				saved, err := chat.Save()
				if err != nil {
					return sessionLoadedMsg{err: err}
				}
				return sessionModelMsg{saved: saved, target: target, model: src}
			} else {
				note = fmt.Sprintf("session %s was made with %s, which is not here (%v)", name, src, err)
				if fetch := src.Fetch(); fetch != "" {
					note += "; " + fetch + " gets it back"
				}
			}
		}
		saved, rep, err := chat.Load(name)
		return sessionLoadedMsg{saved: saved, rep: rep, note: note, err: err}
	}), p.status.Tick())
}

// afterLoaded shows the end of a /load in place.
func (p *chatPage) afterLoaded(msg sessionLoadedMsg) {
	p.busy = ""
	if msg.err != nil {
		p.notice.fail(msg.err)
		return
	}
	p.showOpened(msg.rep, msg.note, savedAs(msg.saved))
}

// showOpened shows a restored (or new) session: the transcript, and what
// became of its model state and its controller.
func (p *chatPage) showOpened(rep chatsession.Report, note, before string) {
	p.used = p.conv.Tokens()
	p.transcript.reset(p.conv.Messages(), p.conv.OutOfView(), p.conv.ReplyControls())
	if rep.New {
		p.notice.say(join(before, "new session "+rep.Name))
		return
	}
	text := fmt.Sprintf("session %s: restored %s tokens in %s", rep.Name, thousands(rep.Tokens), formatMillis(rep.Took))
	if rep.Converted != "" {
		text += " (" + rep.Converted + ")"
	}
	if rep.Fallback != nil {
		text = fmt.Sprintf("session %s: %v\nThe transcript is back; the next message re-processes it (slower, nothing is lost).", rep.Name, rep.Fallback)
	}
	if note != "" {
		text = note + "\n" + text
	}
	if rep.ControllerOn {
		text += "\ncontroller " + rep.Controller + " is back on"
	}
	p.transcript.add(entryInfo, text)
	p.notice.say(join(before, strings.SplitN(text, "\n", 2)[0]))
	switch {
	case rep.ControllerErr != nil:
		p.notice.fail(fmt.Errorf("the session's controller %s: %w; the session keeps it and its state until another controller replaces it", rep.Controller, rep.ControllerErr))
	case rep.ControllerChanged:
		p.notice.warn(fmt.Sprintf("the session's controller %s changed since the session was saved; using the current build", rep.Controller))
	}
}

// sessionItems lists the saved sessions for the picker.
func sessionItems(store sessions.Store) ([]pickItem, error) {
	list, err := store.List()
	var items []pickItem
	for _, s := range list {
		desc := fmt.Sprintf("%s · %s tokens · %s · %s", plural(s.Turns, "turn"), thousands(s.Tokens), s.Model, s.Updated.Local().Format("2006-01-02 15:04"))
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
