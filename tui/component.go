package tui

import tea "charm.land/bubbletea/v2"

// Component is a part of the screen that its parent delegates to: it
// takes the messages meant for it, draws itself, and is sized by its
// parent. The root's pages are components (App.page), and so is the chat
// page's transcript.
type Component interface {
	Update(tea.Msg) tea.Cmd
	View() string
	SetSize(width, height int)
}

var _ Component = (*transcript)(nil)
