package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
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

// View draws the pane: the last lines in a box.
func (p *logPane) View() string {
	if !p.open {
		return ""
	}
	st := p.common.Styles
	inner := max(p.width-4, 10)
	rows := make([]string, 0, logRows)
	rows = append(rows, st.LogTitle.Render("log · ctrl+l hides"))
	start := max(len(p.lines)-(logRows-1), 0)
	for _, l := range p.lines[start:] {
		text := ansi.Truncate(sanitize(l.source+": "+strings.ReplaceAll(l.text, "\n", " ⏎ ")), inner, "…")
		if l.fault {
			rows = append(rows, st.LogFault.Render(text))
		} else {
			rows = append(rows, st.LogLine.Render(text))
		}
	}
	for len(rows) < logRows {
		rows = append(rows, "")
	}
	return st.LogBox.Width(p.width).Render(strings.Join(rows, "\n"))
}
