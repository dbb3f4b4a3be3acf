package tui

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// View draws the screen.
func (m *Model) View() tea.View {
	var content string
	switch m.state {
	case statePickModel:
		content = m.picker.View() + "\n" + m.hintLine("enter load · / filter · tab type a folder or repo id · ctrl+c quit")
	case stateTypeModel:
		content = m.typeModelView()
	case stateLoading:
		content = m.loadingView()
	case stateLoadFailed:
		content = m.loadFailedView()
	default:
		content = m.chatView()
	}
	v := tea.NewView(content)
	v.AltScreen = true
	v.WindowTitle = "driftwood"
	if m.model != nil {
		v.WindowTitle = "driftwood · " + m.model.Name
	}
	return v
}

// chatView is the transcript (or an overlay), the log pane, the notice,
// the input, the hint line and the status bar.
func (m *Model) chatView() string {
	main := m.transcript.View()
	switch {
	case m.showHelp:
		main = m.helpView()
	case m.picker != nil:
		main = m.picker.View()
	}
	parts := []string{fit(main, m.transcript.Height())}
	if v := m.logs.View(); v != "" {
		parts = append(parts, v)
	}
	parts = append(parts, m.noticeView(), m.input.View(), m.input.HintView(), m.status.View(m.statusInfo()))
	return strings.Join(parts, "\n")
}

// statusInfo gathers what the status bar shows.
func (m *Model) statusInfo() statusInfo {
	in := statusInfo{model: m.model.Name, backend: m.model.Backend.Name(), used: m.used, window: m.conv.Window(), unreadLogs: m.logs.unread}
	if mod, arg := m.host.Current(); mod != nil {
		in.controller, in.arg = mod.Name, arg
	}
	if m.stats != nil {
		in.rate = m.stats.GenRate()
	}
	switch {
	case m.reply != nil && m.reply.stopping:
		in.activity = "stopping"
	case m.reply != nil && m.reply.tokens == 0:
		in.activity = "reading the prompt"
	case m.reply != nil:
		in.activity, in.tokens = "generating", m.reply.tokens
	case m.busy != "":
		in.activity = m.busy
	}
	return in
}

// noticeView is the notice line above the input.
func (m *Model) noticeView() string {
	st := m.common.Styles.Notice
	if m.noticeErr {
		st = m.common.Styles.NoticeError
	}
	return st.Render(ansi.Truncate(sanitize(strings.ReplaceAll(m.notice, "\n", " ")), m.common.Width, "…"))
}

// helpView lists the keys and the commands.
func (m *Model) helpView() string {
	st := m.common.Styles
	return strings.Join([]string{
		st.Title.Render("Keys") + st.Subtle.Render("  (? or esc closes)"),
		m.input.FullHelp(m.common.Keys),
		"",
		st.Title.Render("Commands"),
		st.Subtle.Render(commandsText()),
	}, "\n")
}

// typeModelView asks for a model folder or repo id.
func (m *Model) typeModelView() string {
	st := m.common.Styles
	lines := []string{
		st.Title.Render("Which model?"),
		"",
		"Type a model folder, or a Hugging Face repo id to download it",
		st.Subtle.Render("(e.g. mlx-community/Llama-3.2-1B-Instruct-4bit; `driftwood models` lists the downloaded ones)."),
		"",
		m.input.View(),
		"",
		m.hintLine("enter load · esc the list of models · ctrl+c quit"),
	}
	if m.notice != "" {
		lines = append(lines, m.noticeView())
	}
	return strings.Join(lines, "\n")
}

// loadingView shows the model loading, and a download's progress.
func (m *Model) loadingView() string {
	st := m.common.Styles
	lines := []string{"", "  " + m.status.SpinnerView() + " " + st.Title.Render("Loading "+m.loading.name)}
	if m.loading.percent >= 0 {
		lines = append(lines, "", "  "+m.progress.View())
	}
	if m.loading.line != "" {
		lines = append(lines, "  "+st.Subtle.Render(ansi.Truncate(m.loading.line, m.common.Width-2, "…")))
	}
	return strings.Join(lines, "\n")
}

// loadFailedView says why the model did not load and what to do.
func (m *Model) loadFailedView() string {
	st := m.common.Styles
	w := max(m.common.Width-4, 20)
	return strings.Join([]string{
		"",
		"  " + st.Title.Render("Could not load "+m.loading.name),
		"",
		indent(st.NoticeError.Width(w).Render(m.loading.err.Error()), "  "),
		"",
		indent(lipgloss.NewStyle().Width(w).Render(loadAdvice(m.loading.name, m.loading.err)), "  "),
		"",
		m.hintLine("  enter choose another model · ctrl+c quit"),
	}, "\n")
}

// hintLine is a key hint in the hint style.
func (m *Model) hintLine(s string) string {
	return m.common.Styles.Hint.Render(ansi.Truncate(s, m.common.Width, "…"))
}

// fit pads or cuts s to exactly h lines.
func fit(s string, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}
