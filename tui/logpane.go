package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
)

const (
	// logKeep is how many log lines the pane keeps.
	logKeep = 500
	// logRows is how many it shows.
	logRows = 6
)

// logLine is one line of the log pane.
type logLine struct {
	source string // the controller's name, or "driftwood"
	text   string
	fault  bool
}

// logPane collects controller log lines and errors. It is collapsed by
// default; lines that arrive while it is closed are counted in the status
// bar.
type logPane struct {
	common *Common
	lines  []logLine
	open   bool
	unread int
	width  int
}

// SetSize sets the pane's width.
func (p *logPane) SetSize(w int) { p.width = w }

// add appends a line.
func (p *logPane) add(l logLine) {
	p.lines = append(p.lines, l)
	if len(p.lines) > logKeep {
		p.lines = p.lines[len(p.lines)-logKeep:]
	}
	if !p.open {
		p.unread++
	}
}

// Update opens or closes the pane on its key.
func (p *logPane) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok && key.Matches(k, p.common.Keys.Logs) {
		p.open = !p.open
		p.unread = 0
	}
	return nil
}

// Unread counts the lines that arrived while the pane was closed.
func (p *logPane) Unread() int { return p.unread }

// Height is the rows the pane takes (0 when closed).
func (p *logPane) Height() int {
	if !p.open {
		return 0
	}
	return logRows + 2
}

// View draws the pane: the last lines in a box, wrapped (a line longer
// than the pane shows its end).
func (p *logPane) View() string {
	if !p.open {
		return ""
	}
	st := p.common.Styles
	inner := max(p.width-4, 10)
	rows := make([]string, 0, logRows)
	rows = append(rows, st.LogTitle.Render("log · ctrl+l hides"))
	// The last lines, each wrapped whole, as many rows as fit.
	var body []string
	for i := len(p.lines) - 1; i >= 0 && len(body) < logRows-1; i-- {
		l := p.lines[i]
		style := st.LogLine
		if l.fault {
			style = st.LogFault
		}
		wrapped := strings.Split(lipgloss.Wrap(sanitize(l.source+": "+strings.ReplaceAll(l.text, "\n", " ⏎ ")), inner, ""), "\n")
		for j := range wrapped {
			wrapped[j] = style.Render(wrapped[j])
		}
		body = append(wrapped, body...)
	}
	rows = append(rows, body[max(len(body)-(logRows-1), 0):]...)
	for len(rows) < logRows {
		rows = append(rows, "")
	}
	return st.LogBox.Width(p.width).Render(strings.Join(rows, "\n"))
}
