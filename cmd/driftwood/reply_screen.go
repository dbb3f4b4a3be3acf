package main

import (
	"fmt"
	"io"

	"github.com/charmbracelet/x/ansi"
)

// screen is what a terminal shows of a reply. show draws the text as it
// grows; when the text changes behind the cursor (tokens taken back), it
// moves the cursor up to the first row that changed, clears to the end
// of the screen and draws again from that row's start. Rows are counted
// as the terminal lays the text out: wrapped at the width (a character
// that does not fit in the row's last cells goes to the next row whole,
// as a wide one does), with widths as terminals count them (wcwidth,
// escape sequences none), a newline starting a row and a tab moving to
// the next multiple of 8.
//
// It assumes that the reply starts at the first column (nothing else
// was printed on that row) and that the width does not change while it
// draws. When the row to go back to has scrolled out of reach (above
// the screen's top), it clears the whole screen and draws the reply
// again from its start: the rows that scrolled away keep the old text,
// the screen shows the new.
type screen struct {
	width, height int
	shown         []byte // the text drawn
	rows          []int  // where each row the cursor reached starts in shown
	lowest        int    // the lowest row the cursor reached: the screen scrolled for it
	col           int    // the cursor's column; width: at the margin, wrap pending
	buf           []byte // the bytes of one show
}

// show makes the terminal that out writes to show text.
func (s *screen) show(out io.Writer, text []byte) error {
	if s.rows == nil {
		s.rows = []int{0}
	}
	s.buf = s.buf[:0]
	if p := commonPrefix(s.shown, text); p < len(s.shown) {
		s.eraseFrom(p)
	}
	s.draw(text[len(s.shown):])
	if len(s.buf) == 0 {
		return nil
	}
	_, err := out.Write(s.buf)
	return err
}

// eraseFrom clears the text from byte p of shown on: from the start of
// the row that holds the character before p (the cursor's row after
// shown[:p]), or from the top of the screen when that row is out of
// reach, which then restarts the reply there.
//
// A row is in reach when it is at most height-1 rows above the lowest
// row the cursor reached: wherever the reply started, the screen has
// scrolled no further than to show that row at the bottom. (The screen
// never scrolls back, so after an erase the cursor is above the bottom
// and the rows in reach are fewer than those above it.) Moving up by
// height-1 or more rows stops at the top, which is then a row of the
// reply.
func (s *screen) eraseFrom(p int) {
	r := 0
	for r+1 < len(s.rows) && s.rows[r+1] < p {
		r++
	}
	up := len(s.rows) - 1 - r
	if r < s.lowest-(s.height-1) { // out of reach: the whole screen, and the reply anew
		up, r = s.height-1, 0
		s.shown, s.rows, s.lowest = s.shown[:0], s.rows[:1], 0
	}
	if up > 0 {
		s.buf = fmt.Appendf(s.buf, "\x1b[%dA", up)
	}
	s.buf = append(s.buf, "\r\x1b[J"...)
	s.shown, s.rows, s.col = s.shown[:s.rows[r]], s.rows[:r+1], 0
}

// draw writes b after what is shown, following the cursor.
func (s *screen) draw(b []byte) {
	var state byte
	for len(b) > 0 {
		seq, w, n, next := ansi.DecodeSequenceWc(b, state, nil)
		state = next
		switch {
		case len(seq) == 1 && seq[0] == '\n':
			s.newRow(len(s.shown) + 1)
		case len(seq) == 1 && seq[0] == '\r':
			s.col = 0
		case len(seq) == 1 && seq[0] == '\t':
			s.col = min((s.col/8+1)*8, s.width-1)
		case w > 0:
			if s.col+w > s.width {
				s.newRow(len(s.shown))
			}
			s.col += w
		}
		s.shown = append(s.shown, b[:n]...)
		s.buf = append(s.buf, b[:n]...)
		b = b[n:]
	}
}

// newRow moves the cursor to the start of the next row, which starts at
// byte at of shown.
func (s *screen) newRow(at int) {
	s.rows = append(s.rows, at)
	s.lowest = max(s.lowest, len(s.rows)-1)
	s.col = 0
}
