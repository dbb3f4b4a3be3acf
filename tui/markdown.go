package tui

import (
	"strings"

	"charm.land/glamour/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// markdown renders Markdown (code blocks highlighted) at one width.
type markdown struct {
	r     *glamour.TermRenderer
	width int
}

// newMarkdown returns a renderer for a glamour standard style; if the
// style cannot be built the renderer falls back to wrapped plain text.
func newMarkdown(style string, width int) *markdown {
	r, err := glamour.NewTermRenderer(glamour.WithStandardStyle(style), glamour.WithWordWrap(width))
	if err != nil {
		r = nil
	}
	return &markdown{r: r, width: width}
}

// render renders src without the blank lines glamour puts around a
// document and without trailing spaces.
func (m *markdown) render(src string) string {
	if m.r != nil {
		if out, err := m.r.Render(src); err == nil {
			return tidy(out)
		}
	}
	return lipgloss.Wrap(src, m.width, "")
}

// tidy trims trailing spaces from each line and blank lines from both
// ends.
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = trimRight(l)
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// trimRight drops a styled line's trailing spaces ("" for a blank line).
func trimRight(l string) string {
	plain := ansi.Strip(l)
	kept := strings.TrimRight(plain, " \u00a0")
	switch {
	case kept == "":
		return ""
	case len(kept) == len(plain):
		return l
	}
	return ansi.Truncate(l, ansi.StringWidth(kept), "") + ansi.ResetStyle
}

// mdStream renders a growing Markdown text without re-rendering all of it
// at each token: the text is cut into blocks at blank lines (outside code
// fences); finished blocks are rendered once and kept, and only the last,
// growing block is rendered again. A finished reply renders the same way,
// so the screen does not change when the reply ends.
type mdStream struct {
	prefix string   // the text of the finished blocks
	blocks []string // their rendering
}

// render returns the rendering of text, reusing the finished blocks when
// text still starts with them (a backtrack or a new reply starts over).
func (s *mdStream) render(md *markdown, text string) string {
	if !strings.HasPrefix(text, s.prefix) {
		*s = mdStream{}
	}
	if end := blockEnd(text, len(s.prefix)); end > len(s.prefix) {
		if out := md.render(text[len(s.prefix):end]); out != "" {
			s.blocks = append(s.blocks, out)
		}
		s.prefix = text[:end]
	}
	parts := s.blocks
	if tail := md.render(text[len(s.prefix):]); tail != "" {
		parts = append(parts[:len(parts):len(parts)], tail)
	}
	return strings.Join(parts, "\n\n")
}

// blockEnd returns the offset, at or after from (which must be outside a
// code fence), of the start of the last block of text that begins after a
// blank line: outside a fence, not indented (an indented line may continue
// a list item or be code). from when there is none.
func blockEnd(text string, from int) int {
	end, pos := from, from
	blank, fence := false, ""
	for pos < len(text) {
		line, rest, complete := strings.Cut(text[pos:], "\n")
		if blank && fence == "" && line != "" && line[0] != ' ' && line[0] != '\t' {
			end = pos
		}
		if !complete {
			break
		}
		if t := strings.TrimLeft(line, " "); len(line)-len(t) <= 3 && (strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")) {
			switch {
			case fence == "":
				fence = t[:3]
			case strings.HasPrefix(t, fence) && strings.TrimSpace(strings.TrimLeft(t, fence[:1])) == "":
				fence = ""
			}
		}
		blank = strings.TrimSpace(line) == ""
		pos = len(text) - len(rest)
	}
	return end
}
