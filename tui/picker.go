package tui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/list"
	tea "charm.land/bubbletea/v2"
)

// pickerKind is what a picker chooses.
type pickerKind int

const (
	pickModel pickerKind = iota
	pickController
	pickSession
)

// pickItem is one choice.
type pickItem struct {
	title, desc string
	// value is what choosing it gives (a model folder, a name).
	value string
	// label, for a model, is the name it is shown under once loaded.
	label string
}

// Title implements list.DefaultItem.
func (i pickItem) Title() string { return i.title }

// Description implements list.DefaultItem.
func (i pickItem) Description() string { return i.desc }

// FilterValue implements list.Item.
func (i pickItem) FilterValue() string { return i.title }

// picker is a filterable list to choose a model, a controller or a
// session from.
type picker struct {
	common *Common
	kind   pickerKind
	list   list.Model
}

func newPicker(c *Common, kind pickerKind, title string, items []pickItem) *picker {
	d := list.NewDefaultDelegate()
	d.Styles = c.Styles.ListItem
	li := make([]list.Item, len(items))
	for i, it := range items {
		li[i] = it
	}
	l := list.New(li, d, c.Width, c.Height)
	l.Title = title
	l.Styles = c.Styles.List
	l.SetShowStatusBar(false)
	l.DisableQuitKeybindings()
	return &picker{common: c, kind: kind, list: l}
}

// restyle applies new styles.
func (p *picker) restyle() { p.list.Styles = p.common.Styles.List }

// is reports whether the picker chooses a kind of thing.
func (p *picker) is(kind pickerKind) bool { return p.kind == kind }

// SetSize sizes the picker.
func (p *picker) SetSize(w, h int) { p.list.SetSize(w, h) }

// filtering reports whether the user is typing a filter (Enter and Esc
// are then the filter's).
func (p *picker) filtering() bool { return p.list.SettingFilter() }

// Update moves in the list; on Enter it returns the chosen item.
func (p *picker) Update(msg tea.Msg) (*pickItem, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok && !p.filtering() && key.Matches(k, p.common.Keys.Choose) {
		if it, ok := p.list.SelectedItem().(pickItem); ok {
			return &it, nil
		}
		return nil, nil
	}
	var cmd tea.Cmd
	p.list, cmd = p.list.Update(msg)
	return nil, cmd
}

// setItems replaces the choices, keeping the one selected.
func (p *picker) setItems(items []pickItem) {
	li := make([]list.Item, len(items))
	for i, it := range items {
		li[i] = it
	}
	p.list.SetItems(li)
}

// View draws the list.
func (p *picker) View() string { return p.list.View() }
