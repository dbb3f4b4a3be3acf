package tui

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// quitNotice asks for the second Ctrl+C.
const quitNotice = "press ctrl+c again to quit"

// onKey handles a key press on any screen.
func (m *Model) onKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	if key.Matches(k, keys.Interrupt) {
		return m.interrupt()
	}
	m.ladder.disarm()
	if strings.HasPrefix(m.notice, quitNotice) {
		m.say("")
	}
	switch m.state {
	case statePickModel:
		return m.onPickerKey(k)
	case stateTypeModel:
		return m.onTypeModelKey(k)
	case stateLoadFailed:
		if key.Matches(k, keys.Choose) {
			m.say("")
			m.openModelPicker()
		}
		return nil
	case stateLoading:
		return nil
	}
	if m.showHelp {
		// ?, Esc and q close the help; any other key closes it and does
		// what it does, so that nothing typed is lost.
		m.showHelp = false
		if key.Matches(k, keys.Help, keys.Back) || k.String() == "q" {
			return nil
		}
	}
	if m.picker != nil {
		return m.onPickerKey(k)
	}
	switch {
	case key.Matches(k, keys.Stop):
		m.stopReply()
		return nil
	case key.Matches(k, keys.Send):
		return m.submit()
	case key.Matches(k, keys.Tokens):
		m.transcript.toggleTokens()
		return nil
	case key.Matches(k, keys.Logs):
		return m.logs.Update(k)
	case key.Matches(k, keys.Editor):
		return m.openEditor()
	case key.Matches(k, keys.ScrollUp, keys.ScrollDown):
		return m.transcript.Update(k)
	case key.Matches(k, keys.Help) && (m.input.Value() == "" || k.String() != "?"):
		m.showHelp = true
		return nil
	}
	return m.input.Update(k)
}

// interrupt climbs the Ctrl+C ladder.
func (m *Model) interrupt() tea.Cmd {
	hasInput := m.input.Value() != "" && (m.state == stateChat || m.state == stateTypeModel)
	switch m.ladder.press(time.Now(), hasInput, m.reply != nil) {
	case interruptClear:
		m.input.Reset()
		return nil
	case interruptStop:
		m.stopReply()
		return nil
	case interruptQuit:
		return tea.Quit
	}
	if m.state == stateChat {
		m.say(quitNotice + " (the conversation is saved)")
	} else {
		m.say(quitNotice)
	}
	return tea.Tick(quitWindow, func(time.Time) tea.Msg { return quitWindowEndedMsg{} })
}

// onPickerKey drives the open picker.
func (m *Model) onPickerKey(k tea.KeyPressMsg) tea.Cmd {
	p, keys := m.picker, m.common.Keys
	if p == nil {
		return nil
	}
	if !p.filtering() {
		switch {
		case p.kind == pickModel && key.Matches(k, keys.TypeModel):
			m.picker, m.state = nil, stateTypeModel
			m.input.Reset()
			return nil
		case p.kind != pickModel && key.Matches(k, keys.Back):
			m.picker = nil
			return nil
		}
	}
	chosen, cmd := p.Update(k)
	if chosen == nil {
		return cmd
	}
	m.picker = nil
	switch p.kind {
	case pickModel:
		m.picked = cmp.Or(chosen.label, chosen.value) // a repo id rather than its snapshot folder
		return m.loadModel(chosen.value, chosen.label)
	case pickController:
		return m.host.get(chosen.value, "")
	}
	return m.runLoad(chosen.value)
}

// onTypeModelKey reads a model folder or repo id.
func (m *Model) onTypeModelKey(k tea.KeyPressMsg) tea.Cmd {
	keys := m.common.Keys
	switch {
	case key.Matches(k, keys.Send):
		name := strings.TrimSpace(m.input.Value())
		if name == "" {
			return nil
		}
		m.input.Reset()
		m.picked = name
		if abs, err := filepath.Abs(name); err == nil && fileExists(abs) {
			m.picked = abs // a folder, remembered from wherever the next start is
		}
		return m.loadModel(name, "")
	case key.Matches(k, keys.Back):
		m.openModelPicker()
		return nil
	}
	return m.input.Update(k)
}

// openModelPicker offers the known models, or asks for one to be typed
// when there are none.
func (m *Model) openModelPicker() {
	items, err := modelItems(m.opt.Config.Model, m.hub)
	if err != nil {
		m.fail(err)
	}
	if len(items) == 0 {
		m.state, m.picker = stateTypeModel, nil
		m.say("no models in the Hugging Face cache (" + m.hub.CacheDir + ") or the config yet")
		return
	}
	m.state = statePickModel
	m.picker = newPicker(m.common, pickModel, "Choose a model", items)
}

// remember adds a sent input to the history.
func (m *Model) remember(text string) {
	if err := m.input.Remember(text); err != nil {
		m.fail(fmt.Errorf("history not saved: %w", err))
	}
}

// busyError says why the conversation cannot be used right now, or nil.
func (m *Model) busyError() error {
	switch {
	case m.reply != nil:
		return errors.New("a reply is being generated: wait, or press esc to stop it")
	case m.busy != "":
		return errors.New("busy " + m.busy + "…")
	}
	return nil
}

// submit sends the input: a slash command, or a message to the model.
func (m *Model) submit() tea.Cmd {
	text := strings.TrimSpace(m.input.Value())
	if text == "" {
		return nil
	}
	if isCommand(text) {
		c, err := parseCommand(text)
		if err != nil {
			m.fail(err)
			return nil
		}
		if err := m.busyError(); err != nil && !c.spec.whileReplying {
			m.fail(err)
			return nil
		}
		m.remember(text)
		m.input.Reset()
		m.say("")
		return m.run(c)
	}
	if err := m.busyError(); err != nil {
		m.fail(err)
		return nil
	}
	m.remember(text)
	m.input.Reset()
	m.say("")
	if strings.HasPrefix(text, "//") {
		text = text[1:] // "//" sends a message that starts with "/"
	}
	m.transcript.add(entryUser, text)
	m.transcript.beginReply()
	return m.startReply(text, false)
}

// run runs a slash command.
func (m *Model) run(c command) tea.Cmd { return c.spec.run(m, c) }

// setSystem shows, sets ("off": removes) the system prompt.
func (m *Model) setSystem(text string) {
	switch text {
	case "":
		cur := m.systemPrompt()
		if cur == "" {
			cur = "none (/system TEXT sets one)"
		}
		m.transcript.add(entryInfo, "system prompt: "+cur)
		return
	case "off":
		text = ""
	}
	m.conv.SetSystem(text)
	m.transcript.setSystem(text)
	m.dirty = true
	if text == "" {
		m.say("system prompt removed")
	} else {
		m.say("system prompt set")
	}
}

// systemPrompt is the conversation's system prompt ("" for none).
func (m *Model) systemPrompt() string {
	if msgs := m.conv.Messages(); len(msgs) > 0 && msgs[0].Role == "system" {
		return msgs[0].Content
	}
	return ""
}

// regenerate generates the last reply again.
func (m *Model) regenerate() tea.Cmd {
	msgs := m.conv.Messages()
	if len(msgs) == 0 || msgs[len(msgs)-1].Role != "assistant" {
		m.fail(errors.New("there is no reply to regenerate"))
		return nil
	}
	m.transcript.dropLastReply()
	m.transcript.beginReply()
	return m.startReply("", true)
}

// runLoad loads a session, saving the current conversation first.
func (m *Model) runLoad(name string) tea.Cmd {
	if _, err := m.opt.Sessions.Path(name); err != nil {
		m.fail(err)
		return nil
	}
	return m.saveThen(afterLoad, name)
}

// openControllerPicker lists the controllers to switch to.
func (m *Model) openControllerPicker() tea.Cmd {
	var items []pickItem
	for _, e := range m.host.Registry.List() {
		if e.Used { // a file that overrides a shipped controller hides it
			items = append(items, pickItem{title: e.Name, desc: e.Source(), value: e.Name})
		}
	}
	if len(items) == 0 {
		m.fail(fmt.Errorf("no controllers in %s", strings.Join(m.opt.ControllerDirs, ", ")))
		return nil
	}
	m.picker = newPicker(m.common, pickController, "Switch the controller (it applies from the next token)", items)
	return nil
}

// openSessionPicker lists the sessions to load.
func (m *Model) openSessionPicker() tea.Cmd {
	items, err := sessionItems(m.opt.Sessions)
	if err != nil {
		m.fail(err)
		return nil
	}
	if len(items) == 0 {
		m.say("no saved sessions yet (/save NAME saves this one)")
		return nil
	}
	m.picker = newPicker(m.common, pickSession, "Load a session (this conversation is saved first)", items)
	return nil
}

// completionNames lists what an argument may be, for completion.
func (m *Model) completionNames(kind argKind) []string {
	switch kind {
	case argController:
		if m.host != nil {
			return m.host.names()
		}
	case argSession:
		items, _ := sessionItems(m.opt.Sessions)
		names := make([]string, len(items))
		for i, it := range items {
			names[i] = it.value
		}
		return names
	case argSetting:
		return settingNames()
	}
	return nil
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
