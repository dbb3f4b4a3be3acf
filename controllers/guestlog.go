package controllers

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// A guest's text reaches the user line by line, from the log import and
// from its stdout and stderr (WASI's fd_write), made safe to show.

// logMessage passes on the text of one log call: each '\n' in it starts
// a line of its own (a trailing one ends the last). cut says the call's
// text was longer than b.
func (s *instanceState) logMessage(b []byte, cut bool) {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			break
		}
		s.logLine(b[:i], false)
		if b = b[i+1:]; len(b) == 0 && !cut {
			return
		}
	}
	s.logLine(b, cut)
}

// logLine passes on one line of the guest's text, made safe to show: see
// showable. cut says the guest's line was longer than what b holds.
func (s *instanceState) logLine(b []byte, cut bool) {
	switch {
	case s.logf != nil:
		s.logf(showable(b, cut))
	case len(s.held) < maxHeldLogs:
		s.held = append(s.held, showable(b, cut))
	}
}

// showable returns b as one line that cannot pass for the host's output:
// invalid UTF-8 replaced, control and line-separating characters escaped
// (\x1b, \u2028), at most maxLogLine bytes; a line cut short (or cut
// already) ends in "…".
func showable(b []byte, cut bool) string {
	var sb strings.Builder
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		piece := string(b[:size])
		switch {
		case r == utf8.RuneError && size == 1:
			piece = "\uFFFD"
		case r == '\t':
		case r < 0x20 || r == 0x7f:
			piece = fmt.Sprintf(`\x%02x`, r)
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029' || (r >= '\u202a' && r <= '\u202e') || (r >= '\u2066' && r <= '\u2069'):
			piece = fmt.Sprintf(`\u%04x`, r)
		}
		if sb.Len()+len(piece) > maxLogLine {
			cut = true
			break
		}
		sb.WriteString(piece)
		b = b[size:]
	}
	if cut {
		sb.WriteString("…")
	}
	return sb.String()
}

// write collects stdout/stderr bytes into lines.
func (s *instanceState) write(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			i = len(b)
		}
		room := maxLogLine - len(s.line)
		s.line = append(s.line, b[:min(i, room)]...)
		s.cut = s.cut || i > room
		if i == len(b) {
			return
		}
		s.flush()
		b = b[i+1:]
	}
}

// flush logs the output line collected so far, if any.
func (s *instanceState) flush() {
	s.logLine(s.line, s.cut)
	s.line, s.cut = s.line[:0], false
}
