package tui

import (
	"errors"
	"fmt"
	"os"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/sessions"
)

// remember adds a sent input to the history.
func (p *chatPage) remember(text string) {
	if err := p.input.Remember(text); err != nil {
		p.notice.fail(fmt.Errorf("history not saved: %w", err))
	}
}

// busyError says why the conversation cannot be used right now, or nil.
func (p *chatPage) busyError() error {
	switch {
	case p.reply != nil:
		return errors.New("a reply is being generated: wait, or press esc to stop it")
	case p.queued != nil:
		return errors.New("a message is waiting for " + p.switchingName() + ": wait, or press esc to take it back")
	case p.busy != "":
		return errors.New("busy " + p.busy + "…")
	}
	return nil
}

// submit sends the input: a slash command, or a message to the model.
func (p *chatPage) submit() tea.Cmd {
	text := strings.TrimSpace(p.input.Value())
	if text == "" {
		return nil
	}
	if isCommand(text) {
		c, err := parseCommand(text)
		if err != nil {
			p.notice.fail(err)
			return nil
		}
		if err := p.busyError(); err != nil && !c.spec.whileReplying {
			p.notice.fail(err)
			return nil
		}
		p.remember(text)
		p.input.Reset()
		p.notice.say("")
		return c.spec.run(p, c)
	}
	if err := p.busyError(); err != nil {
		p.notice.fail(err)
		return nil
	}
	p.remember(text)
	p.input.Reset()
	p.notice.say("")
	if strings.HasPrefix(text, "//") {
		text = text[1:] // "//" sends a message that starts with "/"
	}
	p.transcript.add(entryUser, text)
	p.transcript.beginReply(p.opensThinking())
	if p.switching != nil {
		return p.queue(&queuedSend{text: text})
	}
	return p.startReply(text, false)
}

// setSystem shows, sets ("off": removes) the system prompt.
func (p *chatPage) setSystem(text string) {
	switch text {
	case "":
		cur := p.systemPrompt()
		if cur == "" {
			cur = "none (/system TEXT sets one)"
		}
		p.transcript.add(entryInfo, "system prompt: "+cur)
		return
	case "off":
		text = ""
	}
	p.conv.SetSystem(text)
	p.transcript.setSystem(text)
	if text == "" {
		p.notice.say("system prompt removed")
	} else {
		p.notice.say("system prompt set")
	}
}

// systemPrompt is the conversation's system prompt ("" for none).
func (p *chatPage) systemPrompt() string {
	if msgs := p.conv.Messages(); len(msgs) > 0 && msgs[0].Role == "system" {
		return msgs[0].Content
	}
	return ""
}

// regenerate generates the last reply again.
func (p *chatPage) regenerate() tea.Cmd {
	msgs := p.conv.Messages()
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" {
		p.notice.fail(errors.New("there is no reply to regenerate"))
		return nil
	}
	p.transcript.regenerating(p.opensThinking())
	if p.switching != nil {
		return p.queue(&queuedSend{regen: true})
	}
	return p.startReply("", true)
}

// openControllerPicker lists the controllers to switch to.
func (p *chatPage) openControllerPicker() tea.Cmd {
	items := p.host.pickItems()
	if len(items) == 0 {
		p.notice.fail(fmt.Errorf("no controllers in %s", strings.Join(p.opt.ControllerDirs, ", ")))
		return nil
	}
	p.picker = newPicker(p.common, pickController, "Switch the controller (it applies from the next token)", items)
	return p.host.describe(p.ctx.Done(), p.work)
}

// openSessionPicker lists the sessions to load.
func (p *chatPage) openSessionPicker() tea.Cmd {
	items, err := sessionItems(p.opt.Sessions)
	if err != nil {
		p.notice.fail(err)
		return nil
	}
	if len(items) == 0 {
		p.notice.say("no saved sessions yet (/save NAME saves this one)")
		return nil
	}
	p.picker = newPicker(p.common, pickSession, "Load a session (this conversation is saved first)", items)
	return nil
}

// argNames lists what an argument may be, for completion: host's
// controllers (none while host is nil), the sessions in store, the
// settings.
func argNames(store sessions.Store, host *controllerHost) func(argKind) []string {
	return func(kind argKind) []string {
		switch kind {
		case argController:
			if host != nil {
				return host.names()
			}
		case argSession:
			items, _ := sessionItems(store)
			names := make([]string, len(items))
			for i, it := range items {
				names[i] = it.value
			}
			return names
		case argSetting:
			return settingNames()
		case argSwitch:
			return []string{"on", "off"}
		}
		return nil
	}
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
