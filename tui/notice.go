package tui

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// quitNotice asks for the second Ctrl+C.
const quitNotice = "press ctrl+c again to quit"

// noticeMsg is a line to show above the input, from a command.
type noticeMsg string

// noticeLine is the one-line notice above the input (and under the
// model prompt): what the last action did, or why it failed. Errors are
// kept in the log pane too. The root and both pages share it.
type noticeLine struct {
	common *Common
	logs   *logPane
	text   string
	err    bool
}

// say shows a notice ("" clears it).
func (n *noticeLine) say(text string) { n.text, n.err = text, false }

// warn shows a notice in the error style, without logging it.
func (n *noticeLine) warn(text string) { n.text, n.err = text, true }

// fail shows an error and keeps it in the log pane.
func (n *noticeLine) fail(err error) {
	n.warn(err.Error())
	n.logs.add(logLine{source: "driftwood", text: err.Error(), fault: true})
}

// Text is the notice shown.
func (n *noticeLine) Text() string { return n.text }

// clearQuit takes back the quit notice, once a key other than Ctrl+C
// disarmed the quit.
func (n *noticeLine) clearQuit() {
	if strings.HasPrefix(n.text, quitNotice) {
		n.say("")
	}
}

// View is the notice, wrapped to the window's width so that a long error
// reads whole. It takes at most a third of the window's height (and at
// least two lines); a longer one is cut, pointing to the log pane, which
// keeps errors too.
func (n *noticeLine) View() string {
	st := n.common.Styles.Notice
	if n.err {
		st = n.common.Styles.NoticeError
	}
	return st.Render(strings.Join(n.lines(), "\n"))
}

// Height is the lines View takes.
func (n *noticeLine) Height() int { return len(n.lines()) }

// lines is the notice wrapped to the window and cut to its share of it.
func (n *noticeLine) lines() []string {
	w := max(n.common.Width, 1)
	lines := strings.Split(lipgloss.Wrap(sanitize(strings.ReplaceAll(n.text, "\n", " ")), w, ""), "\n")
	if most := max(n.common.Height/3, 2); len(lines) > most {
		const more = "… (ctrl+l: the log)"
		lines = lines[:most]
		lines[most-1] = ansi.Truncate(lines[most-1], max(w-ansi.StringWidth(more), 0), "") + more
	}
	return lines
}
