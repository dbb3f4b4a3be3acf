package tui

import (
	"strings"

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

// View is the notice line, cut to the window's width.
func (n *noticeLine) View() string {
	st := n.common.Styles.Notice
	if n.err {
		st = n.common.Styles.NoticeError
	}
	return st.Render(ansi.Truncate(sanitize(strings.ReplaceAll(n.text, "\n", " ")), n.common.Width, "…"))
}
