package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// A controller switch starts the controller with its argument off the UI
// goroutine (a first use compiles it); a message sent meanwhile waits for
// it, so that the controller the user asked for governs the reply, and a
// switch that is refused leaves the previous controller on.

// controllerFlow is the chat's side of the controller host: it shows the
// controllers' log lines, offers them in a picker, switches between them,
// and holds a message sent during a switch until the switch is settled.
type controllerFlow struct {
	*chatState
	chatView
	common  *Common
	ctx     context.Context
	dirs    []string // where the controllers are found
	work    func(func() tea.Msg) tea.Cmd
	replies *replies
	// switching is the switch under way, the last one asked for; queued
	// the message that waits for it.
	switching *pendingSwitch
	switchID  int64
	queued    *queuedSend
}

// pendingSwitch is a controller switch under way ("" turns it off).
type pendingSwitch struct {
	id   int64
	name string
}

// queuedSend is a message, or a regeneration (text ""), waiting for a
// switch.
type queuedSend struct {
	text  string
	regen bool
}

// listen waits for the controllers' next log line.
func (f *controllerFlow) listen() tea.Cmd { return f.host.waitLog(f.ctx.Done()) }

// Update shows a log line and settles a switch.
func (f *controllerFlow) Update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case controllerLoggedMsg:
		return f.onLog(msg)
	case controllerSwitchedMsg:
		return f.onSwitched(msg)
	}
	return nil
}

// onLog shows a controller's log line; a fault is also an error notice.
func (f *controllerFlow) onLog(msg controllerLoggedMsg) tea.Cmd {
	if msg.dropped > 0 {
		f.logs.add(logLine{source: "driftwood", text: thousands(int(msg.dropped)) + " log lines dropped (the controller logs faster than they can be shown)"})
	}
	f.logs.add(logLine{source: msg.Controller, text: msg.Text, fault: msg.Fault})
	if msg.Fault {
		f.notice.warn("controller " + msg.Controller + ": " + msg.Text)
	}
	return f.listen()
}

// openPicker lists the controllers to switch to, and asks them what
// arguments they take (nil, with a notice, when there are none).
func (f *controllerFlow) openPicker() (*picker, tea.Cmd) {
	items := f.host.pickItems()
	if len(items) == 0 {
		f.notice.fail(fmt.Errorf("no controllers in %s", strings.Join(f.dirs, ", ")))
		return nil, nil
	}
	return newPicker(f.common, pickController, "Switch the controller (it applies from the next token)", items), f.host.describe(f.ctx.Done(), f.work)
}

// choose switches to the controller picked, unless it needs an argument:
// then the input asks for it.
func (f *controllerFlow) choose(name string) tea.Cmd {
	if arg, ok := f.host.args[name]; ok && arg.required {
		// Refused without one: the user types it after the name.
		f.input.SetValue("/controller " + name + " ")
		f.notice.say(name + " takes an argument (" + strings.TrimPrefix(arg.line, "required: ") + "): type it and press enter")
		return nil
	}
	return f.switchTo(name, "")
}

// switchTo starts a switch to controller name with arg ("": off).
func (f *controllerFlow) switchTo(name, arg string) tea.Cmd {
	f.switchID++
	f.switching = &pendingSwitch{id: f.switchID, name: name}
	return tea.Batch(f.host.switchTo(f.switchID, name, arg), f.status.Tick())
}

// onSwitched settles the last switch asked for, and sends the message
// that waited for it; a refused switch sends nothing.
func (f *controllerFlow) onSwitched(msg controllerSwitchedMsg) tea.Cmd {
	if msg.stale || f.switching == nil || msg.id != f.switching.id {
		return nil
	}
	f.switching = nil
	queued := f.queued
	f.queued = nil
	if msg.err != nil {
		still := "no controller runs"
		if mod, arg := f.host.Current(); mod != nil {
			still = "controller " + mod.Name + " stays on"
			if arg != "" {
				still += " (" + arg + ")"
			}
		}
		err := fmt.Errorf("%w; %s", msg.err, still)
		if queued != nil {
			f.takeBack(queued.text, f.conv.Messages())
			err = fmt.Errorf("%w; the message was not sent", err)
		}
		f.notice.fail(err)
		return nil
	}
	text := "controller " + msg.name + " on"
	if msg.name == "" {
		text = "controller off"
	}
	if f.replies.stream != nil {
		text += " from the next token"
	}
	f.notice.say(text)
	if queued != nil {
		return f.replies.start(queued.text, queued.regen)
	}
	return nil
}

// send starts the reply to a message (or a regeneration), or holds it
// until the switch under way is settled; the transcript shows it
// waiting.
func (f *controllerFlow) send(q *queuedSend) tea.Cmd {
	if f.switching == nil {
		return f.replies.start(q.text, q.regen)
	}
	f.queued = q
	f.notice.say("waiting for " + f.pendingName() + " (esc cancels the message)")
	return f.status.Tick()
}

// unqueue takes back the message that waits for the switch, if one
// does: the transcript drops it and its text goes back into the input.
func (f *controllerFlow) unqueue() bool {
	q := f.queued
	if q == nil {
		return false
	}
	f.queued = nil
	f.takeBack(q.text, f.conv.Messages())
	f.notice.say("not sent: " + f.pendingName() + " is still starting")
	return true
}

// pendingName names the switch under way.
func (f *controllerFlow) pendingName() string {
	if f.switching.name == "" {
		return "the controller to turn off"
	}
	return "controller " + f.switching.name
}

// activity is what the status bar says of the switch under way ("":
// none).
func (f *controllerFlow) activity() string {
	switch {
	case f.switching == nil:
		return ""
	case f.switching.name == "":
		return "turning the controller off"
	}
	return "starting controller " + f.switching.name
}
