package tui

import (
	"fmt"
	"strings"

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

// sessionFlow saves, clears and loads the chat's session off the UI
// goroutine (the session's rules live in chatsession), and shows what
// each did; busy names the one under way.
type sessionFlow struct {
	*chatState
	chatView
	common *Common
	opt    Options
	work   func(func() tea.Msg) tea.Cmd
	busy   string
}

// Update shows the end of a save, a clear or a load.
func (f *sessionFlow) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case sessionSavedMsg:
		f.busy = ""
		if msg.err != nil {
			f.notice.fail(msg.err)
			return nil
		}
		f.notice.say(fmt.Sprintf("saved session %s (%s tokens)", msg.name, thousands(msg.tokens)))
	case chatClearedMsg:
		f.busy = ""
		if msg.err != nil {
			f.notice.fail(fmt.Errorf("the conversation was not saved, so it stays: %w", msg.err))
			return nil
		}
		f.used = f.conv.Tokens()
		f.transcript.reset(f.conv.Messages(), f.conv.OutOfView(), f.conv.ReplyControls())
		f.notice.say(join("new conversation", savedAs(msg.saved)))
	case sessionLoadedMsg:
		f.busy = ""
		if msg.err != nil {
			f.notice.fail(msg.err)
			return nil
		}
		f.showOpened(msg.rep, msg.note, savedAs(msg.saved))
	}
	return nil
}

// save writes the chat to its session (name "": the one it has, named
// after the time when new), off the UI goroutine.
func (f *sessionFlow) save(name string) tea.Cmd {
	if _, err := f.opt.Sessions.Path(name); name != "" && err != nil {
		f.notice.fail(err)
		return nil
	}
	chat := f.chat
	if name == "" && !chat.Changed() {
		if n := chat.Name(); n != "" {
			f.notice.say("session " + n + " is up to date")
		} else {
			f.notice.say("nothing to save yet")
		}
		return nil
	}
	f.busy = "saving"
	conv := f.conv
	return tea.Batch(f.work(func() tea.Msg {
		var err error
		if name == "" {
			name, err = chat.Save()
		} else {
			err = chat.SaveAs(name)
		}
		return sessionSavedMsg{name: name, tokens: conv.Tokens(), err: err}
	}), f.status.Tick())
}

// clear saves the chat and starts a new one, off the UI goroutine.
func (f *sessionFlow) clear() tea.Cmd {
	f.busy = "starting anew"
	chat := f.chat
	return tea.Batch(f.work(func() tea.Msg {
		saved, err := chat.Clear()
		return chatClearedMsg{saved: saved, err: err}
	}), f.status.Tick())
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
func (f *sessionFlow) load(name string) tea.Cmd {
	if _, err := f.opt.Sessions.Path(name); err != nil {
		f.notice.fail(err)
		return nil
	}
	f.busy = "loading " + name
	chat, store, fingerprint, opt := f.chat, f.opt.Sessions, f.model.Weights.Fingerprint, f.opt
	return tea.Batch(f.work(func() tea.Msg {
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
	}), f.status.Tick())
}

// showOpened shows a restored (or new) session: the transcript, and what
// became of its model state and its controller.
func (f *sessionFlow) showOpened(rep chatsession.Report, note, before string) {
	f.used = f.conv.Tokens()
	f.transcript.reset(f.conv.Messages(), f.conv.OutOfView(), f.conv.ReplyControls())
	if rep.New {
		f.notice.say(join(before, "new session "+rep.Name))
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
	f.transcript.add(entryInfo, text)
	f.notice.say(join(before, strings.SplitN(text, "\n", 2)[0]))
	switch {
	case rep.ControllerErr != nil:
		f.notice.fail(fmt.Errorf("the session's controller %s: %w; the session keeps it and its state until another controller replaces it", rep.Controller, rep.ControllerErr))
	case rep.ControllerChanged:
		f.notice.warn(fmt.Sprintf("the session's controller %s changed since the session was saved; using the current build", rep.Controller))
	}
}

// openPicker lists the sessions to load (nil, with a notice, when there
// are none or they cannot be listed).
func (f *sessionFlow) openPicker() *picker {
	items, err := sessionItems(f.opt.Sessions)
	if err != nil {
		f.notice.fail(err)
		return nil
	}
	if len(items) == 0 {
		f.notice.say("no saved sessions yet (/save NAME saves this one)")
		return nil
	}
	return newPicker(f.common, pickSession, "Load a session (this conversation is saved first)", items)
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

// sessionsText lists the saved sessions (/sessions).
func sessionsText(store sessions.Store) string {
	list, err := store.List()
	if err != nil {
		return err.Error()
	}
	if len(list) == 0 {
		return "no saved sessions in " + store.Dir
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sessions in %s (/load NAME):", store.Dir)
	for _, s := range list {
		if s.Err != nil {
			fmt.Fprintf(&b, "\n  %-20s unreadable: %v", s.Name, s.Err)
			continue
		}
		fmt.Fprintf(&b, "\n  %-20s %9s %7s tokens  %s  %s", s.Name, plural(s.Turns, "turn"), thousands(s.Tokens), s.Updated.Local().Format("2006-01-02 15:04"), s.Model)
	}
	return b.String()
}
