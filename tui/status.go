package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/spinner"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// statusInfo is what the status bar shows.
type statusInfo struct {
	model, backend string
	// controller is the active controller ("" for none) and its argument.
	controller, arg string
	used, window    int
	// compactsAt is the context use from which the next message makes
	// the oldest turns leave the model's view.
	compactsAt int
	// rate is the last reply's speed in tokens per second (0: none yet).
	rate float64
	// activity is what the program is busy with ("" when idle); tokens
	// counts the reply's tokens so far.
	activity string
	tokens   int
	// unreadLogs counts log lines that arrived while the pane was closed.
	unreadLogs int
}

// statusBar is the line at the bottom: model, backend, controller,
// context use and speed, with a spinner while busy.
type statusBar struct {
	common  *Common
	spinner spinner.Model
	width   int
}

func newStatusBar(c *Common) statusBar {
	return statusBar{common: c, spinner: spinner.New(spinner.WithSpinner(spinner.MiniDot))}
}

// SetSize sets the bar's width.
func (s *statusBar) SetSize(w int) { s.width = w }

// Tick starts the spinner, for work that shows it (the command holds a
// copy of the spinner: it runs off the UI goroutine).
func (s *statusBar) Tick() tea.Cmd { return s.spinner.Tick }

// SpinnerView is the spinner's frame.
func (s *statusBar) SpinnerView() string { return s.spinner.View() }

// Update advances the spinner.
func (s *statusBar) Update(msg tea.Msg) tea.Cmd {
	var cmd tea.Cmd
	s.spinner, cmd = s.spinner.Update(msg)
	return cmd
}

// View draws the bar.
func (s *statusBar) View(in statusInfo) string {
	st := s.common.Styles
	left := []string{st.StatusModel.Render(in.model)}
	if in.backend != "" {
		left = append(left, st.StatusItem.Render(in.backend))
	}
	if in.controller != "" {
		c := "◆ " + in.controller
		if in.arg != "" {
			c += " " + ansi.Truncate(sanitize(strings.ReplaceAll(in.arg, "\n", " ")), 24, "…")
		}
		left = append(left, st.StatusAccent.Render(c))
	} else {
		left = append(left, st.StatusItem.Render("no controller"))
	}
	if in.window > 0 {
		left = append(left, s.contextView(in.used, in.window, in.compactsAt))
	}
	var right []string
	if in.unreadLogs > 0 {
		right = append(right, st.StatusWarn.Render(plural(in.unreadLogs, "log")+" ctrl+l"))
	}
	switch {
	case in.activity != "" && in.tokens > 0:
		right = append(right, st.StatusAccent.Render(fmt.Sprintf("%s %s · %d tokens", s.spinner.View(), in.activity, in.tokens)))
	case in.activity != "":
		right = append(right, st.StatusAccent.Render(s.spinner.View()+" "+in.activity))
	case in.rate > 0:
		right = append(right, st.StatusItem.Render(fmt.Sprintf("%7.1f tok/s", in.rate)))
	}
	l, r := strings.Join(left, ""), strings.Join(right, "")
	if room := s.width - lipgloss.Width(r) - 1; lipgloss.Width(l) > room {
		l = ansi.Truncate(l, max(room, 0), "…")
	}
	gap := max(s.width-lipgloss.Width(l)-lipgloss.Width(r), 0)
	return ansi.Truncate(l+st.Status.Render(strings.Repeat(" ", gap))+r, s.width, "")
}

// contextView is "ctx 1,234/8,192", in a warning style that says
// "compacts next" once the next message makes the oldest turns leave the
// model's view (from compactsAt), and when the window is full.
func (s *statusBar) contextView(used, window, compactsAt int) string {
	st := s.common.Styles
	text := fmt.Sprintf("ctx %s/%s", thousands(used), thousands(window))
	switch {
	case float64(used) >= 0.97*float64(window):
		return st.StatusDanger.Render(text + " full")
	case compactsAt > 0 && used >= compactsAt:
		return st.StatusWarn.Render(fmt.Sprintf("%s %.0f%% · compacts next", text, 100*float64(used)/float64(window)))
	}
	return st.StatusItem.Render(text)
}
