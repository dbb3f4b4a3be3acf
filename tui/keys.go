package tui

import "charm.land/bubbles/v2/key"

// KeyMap is every key binding of the chat; the help view is made from it.
type KeyMap struct {
	Send        key.Binding
	Newline     key.Binding
	Interrupt   key.Binding
	Stop        key.Binding
	HistoryPrev key.Binding
	HistoryNext key.Binding
	Complete    key.Binding
	Editor      key.Binding
	ScrollUp    key.Binding
	ScrollDown  key.Binding
	Tokens      key.Binding
	Thinking    key.Binding
	Logs        key.Binding
	Help        key.Binding

	// In pickers.
	Choose    key.Binding
	Back      key.Binding
	TypeModel key.Binding
}

// DefaultKeyMap returns the default bindings. Shift+Enter is told from
// Enter only by terminals that report it (those speaking the kitty
// keyboard protocol); Ctrl+J works everywhere.
func DefaultKeyMap() *KeyMap {
	return &KeyMap{
		Send:        key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "send")),
		Newline:     key.NewBinding(key.WithKeys("ctrl+j", "shift+enter", "alt+enter"), key.WithHelp("ctrl+j", "new line")),
		Interrupt:   key.NewBinding(key.WithKeys("ctrl+c"), key.WithHelp("ctrl+c", "clear, stop, quit")),
		Stop:        key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "stop the reply")),
		HistoryPrev: key.NewBinding(key.WithKeys("up"), key.WithHelp("↑", "older input")),
		HistoryNext: key.NewBinding(key.WithKeys("down"), key.WithHelp("↓", "newer input")),
		Complete:    key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "complete")),
		Editor:      key.NewBinding(key.WithKeys("ctrl+e"), key.WithHelp("ctrl+e", "edit in $EDITOR")),
		ScrollUp:    key.NewBinding(key.WithKeys("pgup"), key.WithHelp("pgup", "scroll up")),
		ScrollDown:  key.NewBinding(key.WithKeys("pgdown"), key.WithHelp("pgdn", "scroll down")),
		Tokens:      key.NewBinding(key.WithKeys("ctrl+t"), key.WithHelp("ctrl+t", "per-token controller view")),
		Thinking:    key.NewBinding(key.WithKeys("ctrl+o"), key.WithHelp("ctrl+o", "show or fold the thinking")),
		Logs:        key.NewBinding(key.WithKeys("ctrl+l"), key.WithHelp("ctrl+l", "log pane")),
		Help:        key.NewBinding(key.WithKeys("?", "f1"), key.WithHelp("?", "help")),

		Choose:    key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "choose")),
		Back:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "back")),
		TypeModel: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "type a folder or repo id")),
	}
}

// ShortHelp is the one-line help under the input (help.KeyMap).
func (k *KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Send, k.Newline, k.Stop, k.Help}
}

// FullHelp is the help view's columns (help.KeyMap).
func (k *KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Send, k.Newline, k.Complete, k.Editor, k.HistoryPrev, k.HistoryNext},
		{k.Stop, k.Interrupt, k.ScrollUp, k.ScrollDown},
		{k.Tokens, k.Thinking, k.Logs, k.Help},
	}
}
