package tui

import (
	"errors"
	"fmt"

	tea "charm.land/bubbletea/v2"
)

// The slash commands' handlers; commandSpecs lists them with their names,
// arguments and help, so that a command is one row there and one
// function here.

func runController(m *Model, c command) tea.Cmd {
	if c.arg(0) == "off" {
		m.host.Driver.Off()
		m.dirty = true
		m.say("controller off")
		return nil
	}
	return m.host.get(c.arg(0), c.arg(1))
}

func runControllers(m *Model, _ command) tea.Cmd { return m.openControllerPicker() }

func runSave(m *Model, c command) tea.Cmd {
	name := c.arg(0)
	if name == "" {
		name = m.sessionName()
	} else if _, err := m.opt.Sessions.Path(name); err != nil {
		m.fail(err)
		return nil
	}
	return m.save(name, afterNothing, "")
}

func runLoad(m *Model, c command) tea.Cmd {
	if c.arg(0) == "" {
		return m.openSessionPicker()
	}
	return m.runLoad(c.arg(0))
}

func runSessions(m *Model, _ command) tea.Cmd {
	m.transcript.add(entryInfo, sessionsText(m.opt.Sessions))
	return nil
}

func runNew(m *Model, _ command) tea.Cmd { return m.saveThen(afterNew, "") }

func runSystem(m *Model, c command) tea.Cmd {
	m.setSystem(c.arg(0))
	return nil
}

func runSet(m *Model, c command) tea.Cmd {
	s, n, err := applySetting(m.conv.Sampler(), m.conv.MaxTokens(), c.arg(0), c.arg(1))
	if err == nil {
		err = m.conv.SetSampler(s)
	}
	if err != nil {
		m.fail(err)
		return nil
	}
	m.conv.SetMaxTokens(n)
	m.dirty = true
	m.say(c.arg(0) + " = " + c.arg(1))
	return nil
}

func runShow(m *Model, _ command) tea.Cmd {
	m.transcript.add(entryInfo, m.showText())
	return nil
}

func runRegen(m *Model, _ command) tea.Cmd { return m.regenerate() }

func runCopy(m *Model, _ command) tea.Cmd {
	text, ok := m.transcript.lastReply()
	if !ok {
		m.fail(errors.New("there is no reply to copy yet"))
		return nil
	}
	m.say(fmt.Sprintf("copied the last reply (%s characters) to the clipboard", thousands(len([]rune(text)))))
	return tea.SetClipboard(text)
}

func runStats(m *Model, _ command) tea.Cmd {
	m.transcript.add(entryInfo, m.statsText())
	return nil
}

func runHelp(m *Model, _ command) tea.Cmd {
	m.transcript.add(entryInfo, "commands (tab completes them; ? lists the keys too):\n"+commandsText())
	return nil
}

func runQuit(*Model, command) tea.Cmd { return tea.Quit }
