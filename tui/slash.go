package tui

import (
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/controllers"
)

// The slash commands' handlers; commandSpecs lists them with their names,
// arguments and help, so that a command is one row there and one
// function here.

func runController(p *chatPage, c command) tea.Cmd {
	if c.arg(0) == "off" {
		return p.switchController("", "")
	}
	arg, err := controllers.ReadArg(c.arg(1))
	if err != nil {
		p.notice.fail(err)
		return nil
	}
	return p.switchController(c.arg(0), arg)
}

func runControllers(p *chatPage, _ command) tea.Cmd { return p.openControllerPicker() }

func runSave(p *chatPage, c command) tea.Cmd {
	name := c.arg(0)
	if _, err := p.opt.Sessions.Path(name); name != "" && err != nil {
		p.notice.fail(err)
		return nil
	}
	return p.save(name)
}

func runLoad(p *chatPage, c command) tea.Cmd {
	if c.arg(0) == "" {
		return p.openSessionPicker()
	}
	return p.load(c.arg(0))
}

func runSessions(p *chatPage, _ command) tea.Cmd {
	p.transcript.addHanging(entryInfo, sessionsText(p.opt.Sessions), sessionsHang)
	return nil
}

func runNew(p *chatPage, _ command) tea.Cmd { return p.clear() }

func runSystem(p *chatPage, c command) tea.Cmd {
	p.setSystem(c.arg(0))
	return nil
}

func runSet(p *chatPage, c command) tea.Cmd {
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

func runThink(p *chatPage, c command) tea.Cmd {
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

func runShow(p *chatPage, _ command) tea.Cmd {
	p.transcript.addHanging(entryInfo, p.showText(), showHang)
	return nil
}

func runRegen(p *chatPage, _ command) tea.Cmd { return p.regenerate() }

func runCompact(p *chatPage, _ command) tea.Cmd {
	comp, err := p.conv.Compact()
	if err != nil {
		p.notice.warn(err.Error())
		return nil
	}
	p.compacted(comp)
	return nil
}

func runCopy(p *chatPage, _ command) tea.Cmd {
	text, ok := p.transcript.lastReply()
	if !ok {
		p.notice.fail(errors.New("there is no reply to copy yet"))
		return nil
	}
	text = answer(text)
	p.notice.say(fmt.Sprintf("copied the last reply (%s characters) to the clipboard", thousands(len([]rune(text)))))
	return tea.SetClipboard(text)
}

func runStats(p *chatPage, _ command) tea.Cmd {
	p.transcript.add(entryInfo, p.statsText())
	return nil
}

func runHelp(p *chatPage, _ command) tea.Cmd {
	p.transcript.addHanging(entryInfo, "commands (tab completes them; ? lists the keys too):\n"+commandsText(), commandHang)
	return nil
}

func runQuit(*chatPage, command) tea.Cmd { return tea.Quit }
