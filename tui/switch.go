package tui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"
)

// A controller switch starts the controller with its argument off the UI
// goroutine (a first use compiles it); a message sent meanwhile waits for
// it, so that the controller the user asked for governs the reply, and a
// switch that is refused leaves the previous controller on.

// pendingSwitch is a controller switch under way ("" turns it off).
type pendingSwitch struct {
	id   int64
	name string
}

// queuedSend is a message, or a regeneration, waiting for a switch.
type queuedSend struct {
	text  string
	regen bool
}

// switchController starts a switch to controller name with arg ("":
// off).
func (p *chatPage) switchController(name, arg string) tea.Cmd {
	p.switchID++
	p.switching = &pendingSwitch{id: p.switchID, name: name}
	return tea.Batch(p.host.switchTo(p.switchID, name, arg), p.status.Tick())
}

// onSwitched settles the last switch asked for, and sends the message
// that waited for it; a refused switch sends nothing.
func (p *chatPage) onSwitched(msg controllerSwitchedMsg) tea.Cmd {
	if msg.stale || p.switching == nil || msg.id != p.switching.id {
		return nil
	}
	p.switching = nil
	queued := p.queued
	p.queued = nil
	if msg.err != nil {
		still := "no controller runs"
		if mod, arg := p.host.Current(); mod != nil {
			still = "controller " + mod.Name + " stays on"
			if arg != "" {
				still += " (" + arg + ")"
			}
		}
		err := fmt.Errorf("%w; %s", msg.err, still)
		if queued != nil {
			p.unqueue(queued)
			err = fmt.Errorf("%w; the message was not sent", err)
		}
		p.notice.fail(err)
		return nil
	}
	text := "controller " + msg.name + " on"
	if msg.name == "" {
		text = "controller off"
	}
	if p.reply != nil {
		text += " from the next token"
	}
	p.notice.say(text)
	if queued != nil {
		return p.startReply(queued.text, queued.regen)
	}
	return nil
}

// queue holds a message (or a regeneration) until the switch under way
// is settled; the transcript shows it waiting.
func (p *chatPage) queue(q *queuedSend) tea.Cmd {
	p.queued = q
	p.notice.say("waiting for " + p.switchingName() + " (esc cancels the message)")
	return p.status.Tick()
}

// unqueue takes back the message that waited: the transcript drops it and
// its text goes back into the input.
func (p *chatPage) unqueue(q *queuedSend) {
	p.transcript.unsend(!q.regen, p.conv.Messages())
	if !q.regen && p.input.Value() == "" {
		p.input.SetValue(q.text)
	}
}

// switchingName names the switch under way, for the status bar.
func (p *chatPage) switchingName() string {
	if p.switching.name == "" {
		return "the controller to turn off"
	}
	return "controller " + p.switching.name
}
