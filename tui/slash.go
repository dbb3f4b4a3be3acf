package tui

import (
	"errors"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/controllers"
)

// The slash commands' handlers; commandSpecs lists them with their names,
// arguments and help, so that a command is one row there and one
// function here. A handler acts on the chat's parts (chatParts): its
// state, and the components that own the rest of it.

// How far the wrapped lines of /help, /show and /sessions are indented:
// under the description, the value, the figures.
const (
	commandHang  = 26
	showHang     = 12
	sessionsHang = 23
)

func runController(p *chatParts, c command) tea.Cmd {
	if c.arg(0) == "off" {
		return p.ctrl.switchTo("", "")
	}
	arg, err := controllers.ReadArg(c.arg(1))
	if err != nil {
		p.notice.fail(err)
		return nil
	}
	return p.ctrl.switchTo(c.arg(0), arg)
}

func runControllers(p *chatParts, _ command) tea.Cmd {
	pk, cmd := p.ctrl.openPicker()
	if pk != nil {
		p.picker = pk
	}
	return cmd
}

func runSave(p *chatParts, c command) tea.Cmd { return p.sessions.save(c.arg(0)) }

func runLoad(p *chatParts, c command) tea.Cmd {
	if c.arg(0) == "" {
		if pk := p.sessions.openPicker(); pk != nil {
			p.picker = pk
		}
		return nil
	}
	return p.sessions.load(c.arg(0))
}

func runSessions(p *chatParts, _ command) tea.Cmd {
	p.transcript.addHanging(entryInfo, sessionsText(p.sessions.opt.Sessions), sessionsHang)
	return nil
}

func runNew(p *chatParts, _ command) tea.Cmd { return p.sessions.clear() }

func runSystem(p *chatParts, c command) tea.Cmd {
	text := c.arg(0)
	switch text {
	case "":
		cur := p.systemPrompt()
		if cur == "" {
			cur = "none (/system TEXT sets one)"
		}
		p.transcript.add(entryInfo, "system prompt: "+cur)
		return nil
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
	return nil
}

func runSet(p *chatParts, c command) tea.Cmd {
	s, n, err := applySetting(p.conv.Sampler(), p.conv.MaxTokens(), c.arg(0), c.arg(1))
	if err == nil {
		err = p.conv.SetSampler(s)
	}
	if err != nil {
		p.notice.fail(err)
		return nil
	}
	p.conv.SetMaxTokens(n)
	p.notice.say(c.arg(0) + " = " + c.arg(1))
	return nil
}

func runThink(p *chatParts, c command) tea.Cmd {
	arg := c.arg(0)
	switch {
	case arg != "" && arg != "on" && arg != "off":
		p.notice.fail(errors.New("usage: /think [on | off]"))
	case !p.conv.SwitchesThinking():
		text := "the chat template of " + p.model.Name + " has no thinking switch (enable_thinking): /think changes nothing for this model"
		if arg == "" {
			p.notice.say(text)
		} else {
			p.notice.fail(errors.New(text))
		}
	case arg == "":
		p.notice.say("thinking " + p.thinkingState() + " (/think on|off switches it)")
	default:
		on := arg == "on"
		p.conv.SetThinking(&on)
		p.notice.say("thinking " + arg + " from the next reply")
	}
	return nil
}

func runShow(p *chatParts, _ command) tea.Cmd {
	p.transcript.addHanging(entryInfo, p.showText(), showHang)
	return nil
}

func runRegen(p *chatParts, _ command) tea.Cmd {
	msgs := p.conv.Messages()
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" {
		p.notice.fail(errors.New("there is no reply to regenerate"))
		return nil
	}
	p.transcript.regenerating(p.opensThinking())
	return p.ctrl.send(&queuedSend{regen: true})
}

func runCompact(p *chatParts, _ command) tea.Cmd {
	comp, err := p.conv.Compact()
	if err != nil {
		p.notice.warn(err.Error())
		return nil
	}
	p.replies.compacted(comp)
	return nil
}

func runCopy(p *chatParts, _ command) tea.Cmd {
	text, ok := p.transcript.lastReply()
	if !ok {
		p.notice.fail(errors.New("there is no reply to copy yet"))
		return nil
	}
	text = answer(text)
	p.notice.say(fmt.Sprintf("copied the last reply (%s characters) to the clipboard", thousands(len([]rune(text)))))
	return tea.SetClipboard(text)
}

func runStats(p *chatParts, _ command) tea.Cmd {
	p.transcript.add(entryInfo, p.statsText())
	return nil
}

func runHelp(p *chatParts, _ command) tea.Cmd {
	p.transcript.addHanging(entryInfo, "commands (tab completes them; ? lists the keys too):\n"+commandsText(), commandHang)
	return nil
}

func runQuit(*chatParts, command) tea.Cmd { return tea.Quit }

// commandsText lists the slash commands (for /help and the help view); a
// long usage puts its description on the next line.
func commandsText() string {
	const width = commandHang - 2
	var lines []string
	for _, c := range commandSpecs() {
		usage := commandUsage(c)
		if len(usage) > width {
			lines = append(lines, usage, strings.Repeat(" ", commandHang)+c.help)
			continue
		}
		lines = append(lines, fmt.Sprintf("%-*s  %s", width, usage, c.help))
	}
	return strings.Join(lines, "\n")
}
