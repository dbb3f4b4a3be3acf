package tui

import (
	"errors"
	"os"
	"os/exec"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// openEditor edits the input in $VISUAL or $EDITOR (vi when neither is
// set); the program pauses until the editor exits.
func (m *Model) openEditor() tea.Cmd {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	f, err := os.CreateTemp("", "driftwood-*.md")
	if err != nil {
		m.fail(err)
		return nil
	}
	path := f.Name()
	_, err = f.WriteString(m.input.Value())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		m.fail(err)
		return nil
	}
	args := strings.Fields(editor)
	c := exec.Command(args[0], append(args[1:], path)...)
	return tea.ExecProcess(c, func(err error) tea.Msg {
		defer os.Remove(path)
		if err != nil {
			return editorClosedMsg{err: errors.New("$EDITOR (" + editor + "): " + err.Error())}
		}
		b, err := os.ReadFile(path)
		return editorClosedMsg{text: strings.TrimRight(string(b), "\n"), err: err}
	})
}
