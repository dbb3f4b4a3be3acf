package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/charmbracelet/x/vt"
)

// terminal is a virtual terminal (charmbracelet/x/vt) fed as a tty
// feeds one: "\n" arrives as "\r\n" (the tty's onlcr).
type terminal struct{ *vt.Emulator }

func newTerminal(width, height int) terminal {
	return terminal{vt.NewEmulator(width, height)}
}

func (t terminal) Write(b []byte) (int, error) {
	t.Emulator.Write(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")))
	return len(b), nil
}

// lines returns every row the terminal holds, the scrolled-off ones
// first, without trailing blanks, and the cursor's position among them.
func (t terminal) lines() (rows []string, x, y int) {
	for r := range t.ScrollbackLen() {
		var sb strings.Builder
		for c := range t.Width() {
			if cell := t.ScrollbackCellAt(c, r); cell != nil {
				sb.WriteString(cell.Content)
			}
		}
		rows = append(rows, strings.TrimRight(sb.String(), " "))
	}
	for _, l := range strings.Split(t.String(), "\n") {
		rows = append(rows, strings.TrimRight(l, " "))
	}
	for len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1]
	}
	pos := t.CursorPosition()
	return rows, pos.X, t.ScrollbackLen() + pos.Y
}

// TestScreenErases: after each step of a reply that grows and is taken
// back, the virtual terminal the screen draws on shows exactly what it
// shows when the text at that step is written to a fresh one at once,
// scrollback included, with the cursor at the same place: the erase
// reaches back across wrapped rows, newlines, wide characters, a row
// filled to the margin (wrap pending) and tabs. On a short terminal,
// where the rows to erase have scrolled out of reach, the screen shows
// what a fresh one does.
func TestScreenErases(t *testing.T) {
	steps := []string{
		"hello",
		"hello world, this wraps",
		"hello world, th",                  // back across a wrap
		"hello world, the 世界 is wide",      // wide characters, one at the margin
		"hello wor",                        // back two rows
		"hello world\nand more\tand a tab", // newlines and a tab
		"hello world\n",                    // back to just after a newline
		"hello world\nabcdefghij",          // a row filled to the margin: wrap pending
		"hello world\nabcdefghijk",         // the wrap taken
		"hello world\nabcdefghij",          // and taken back
		"",                                 // everything
		"a fresh start that is long enough to wrap more than a few rows of ten cells",
		"a fresh start that is long enough",
	}
	for _, height := range []int{20, 3} {
		screenTerm := newTerminal(10, height)
		s := &screen{width: 10, height: height}
		for i, text := range steps {
			if err := s.show(screenTerm, []byte(text)); err != nil {
				t.Fatal(err)
			}
			fresh := newTerminal(10, 100)
			fresh.Write([]byte(text))
			got, gx, gy := screenTerm.lines()
			want, wx, wy := fresh.lines()
			if height == 3 && len(got) > len(want) {
				// Rows out of reach keep the text they had: the reply
				// drawn anew follows them.
				gy -= len(got) - len(want)
				got = got[len(got)-len(want):]
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") || gx != wx || gy != wy {
				t.Errorf("height %d, step %d (%q): the screen shows\n%s\ncursor (%d, %d); written at once:\n%s\ncursor (%d, %d)",
					height, i, text, strings.Join(got, "\n"), gx, gy, strings.Join(want, "\n"), wx, wy)
			}
		}
	}
}
