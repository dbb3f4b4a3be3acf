package tui

import (
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// inputMaxLines is how tall the input grows before it scrolls.
const inputMaxLines = 10

// input is the message box: a textarea that grows with its text, with
// history on Up/Down at its first/last line and Tab completion of slash
// commands. Enter is the root's (it sends).
type input struct {
	common *Common
	ta     textarea.Model
	help   help.Model
	hist   *history
	// names lists what a command's argument may be, for completion.
	names func(argKind) []string
	// comp are the completions of the line typed; compIdx the one Tab
	// last put in the input (-1: none yet).
	comp    []string
	compIdx int
	width   int
}

func newInput(c *Common, hist *history, names func(argKind) []string) input {
	ta := textarea.New()
	ta.ShowLineNumbers = false
	ta.Prompt = ""
	ta.SetPromptFunc(2, func(p textarea.PromptInfo) string {
		if p.LineNumber == 0 {
			return "› "
		}
		return "  "
	})
	ta.Placeholder = "Message · / for commands · ? for help"
	ta.DynamicHeight, ta.MinHeight, ta.MaxHeight = true, 1, inputMaxLines
	ta.MaxContentHeight = 1 << 20
	km := &ta.KeyMap
	km.InsertNewline = c.Keys.Newline
	km.LineEnd.SetKeys("end")
	km.LinePrevious.SetKeys("up", "ctrl+p")
	km.LineNext.SetKeys("down", "ctrl+n")
	km.PageUp.Unbind()
	km.PageDown.Unbind()
	km.TransposeCharacterBackward.Unbind() // ctrl+t is the token view
	ta.SetStyles(c.Styles.Textarea)
	ta.Focus()
	h := help.New()
	h.Styles = c.Styles.Help
	return input{common: c, ta: ta, help: h, hist: hist, names: names, compIdx: -1}
}

// SetSize sets the input's width; its height follows its text.
func (in *input) SetSize(w int) {
	if w != in.width {
		in.width = w
		in.ta.SetWidth(w)
		in.help.SetWidth(w)
	}
}

// restyle applies new styles.
func (in *input) restyle() {
	in.ta.SetStyles(in.common.Styles.Textarea)
	in.help.Styles = in.common.Styles.Help
}

// Height is the rows the input takes: a rule and the text.
func (in *input) Height() int { return 1 + in.ta.Height() }

// Focus gives the text area the cursor.
func (in *input) Focus() tea.Cmd { return in.ta.Focus() }

// Remember adds a sent input to the history.
func (in *input) Remember(text string) error { return in.hist.add(text) }

// FullHelp is every key binding, for the help view.
func (in *input) FullHelp(keys *KeyMap) string {
	h := in.help
	h.ShowAll = true
	return h.View(keys)
}

// SetPlaceholder sets what the empty input shows.
func (in *input) SetPlaceholder(s string) { in.ta.Placeholder = s }

// Value is the text typed.
func (in *input) Value() string { return in.ta.Value() }

// SetValue replaces the text, the cursor at its end.
func (in *input) SetValue(s string) {
	in.ta.SetValue(s)
	in.ta.MoveToEnd()
	in.complete()
}

// Reset empties the input.
func (in *input) Reset() { in.SetValue("") }

// Update handles history, completion and editing keys.
func (in *input) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		keys := in.common.Keys
		switch {
		case key.Matches(k, keys.Complete):
			in.cycle()
			return nil
		case key.Matches(k, keys.HistoryPrev) && in.onFirstRow():
			if s, ok := in.hist.prev(in.Value()); ok {
				in.SetValue(s)
			}
			return nil
		case key.Matches(k, keys.HistoryNext) && in.onLastRow():
			if s, ok := in.hist.next(); ok {
				in.SetValue(s)
			}
			return nil
		}
	}
	before := in.Value()
	var cmd tea.Cmd
	in.ta, cmd = in.ta.Update(msg)
	if in.Value() != before {
		in.complete()
	}
	return cmd
}

// onFirstRow reports whether the cursor is on the input's first row.
func (in *input) onFirstRow() bool { return in.ta.Line() == 0 && in.ta.LineInfo().RowOffset == 0 }

// onLastRow reports whether the cursor is on the input's last row.
func (in *input) onLastRow() bool {
	li := in.ta.LineInfo()
	return in.ta.Line() == in.ta.LineCount()-1 && li.RowOffset >= li.Height-1
}

// complete recomputes the completions of the line typed.
func (in *input) complete() {
	in.comp, in.compIdx = completions(in.Value(), in.names), -1
}

// cycle puts the next completion in the input; a single one is taken
// with a space after it when more can follow.
func (in *input) cycle() {
	switch len(in.comp) {
	case 0:
		return
	case 1:
		line := in.comp[0]
		if spec, ok := lookupCommand(strings.TrimPrefix(line, "/")); !ok || spec.arg != argNone {
			line += " "
		}
		in.SetValue(line)
		return
	}
	comp, idx := in.comp, (in.compIdx+1)%len(in.comp)
	in.SetValue(comp[idx])
	in.comp, in.compIdx = comp, idx
}

// View draws the rule above the input and the input.
func (in *input) View() string {
	rule := in.common.Styles.InputRule.Render(strings.Repeat("─", max(in.common.Width, 1)))
	return rule + "\n" + in.ta.View()
}

// HintView is the line under the input: the completions of a command
// being typed, a command's usage, or the key help.
func (in *input) HintView() string {
	st, w := in.common.Styles, in.common.Width
	line := in.Value()
	if len(in.comp) > 1 || len(in.comp) == 1 && in.comp[0] != strings.TrimSpace(line) {
		parts := make([]string, len(in.comp))
		for i, c := range in.comp {
			parts[i] = st.Hint.Render(c)
			if i == in.compIdx {
				parts[i] = st.HintActive.Render(c)
			}
		}
		return ansi.Truncate(strings.Join(parts, st.Hint.Render("  ")), w, "…")
	}
	if isCommand(line) {
		name, _, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
		if spec, ok := lookupCommand(strings.ToLower(name)); ok {
			return ansi.Truncate(st.Hint.Render(commandUsage(spec)+" — "+spec.help), w, "…")
		}
	}
	return in.help.ShortHelpView(in.common.Keys.ShortHelp())
}
