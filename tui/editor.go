package tui

import (
	"errors"
	"os"
	"os/exec"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// editorClosedMsg brings back the text edited in $EDITOR.
type editorClosedMsg struct {
	text string
	err  error
}

// editInput edits text in $VISUAL or $EDITOR (vi when neither is set);
// the program pauses until the editor exits, then an editorClosedMsg
// brings the text back.
func editInput(text string) (tea.Cmd, error) {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	f, err := os.CreateTemp("", "driftwood-*.md")
	if err != nil {
		return nil, err
	}
	path := f.Name()
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, err
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
	}), nil
}
