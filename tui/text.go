package tui

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/charmbracelet/x/ansi"
)

// The text helpers every component uses: they know nothing of the chat.

// sanitize replaces control characters other than newline and tab with
// U+FFFD: text from the model must not reach the terminal as escape
// sequences (which could, for one, write the clipboard).
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return unicode.ReplacementChar
	}, s)
}

// hangWrap wraps each line of s to width, indenting the continuation of a
// wrapped line by hang columns (0: s as it is, for the style to wrap).
func hangWrap(s string, width, hang int) string {
	if hang <= 0 || width <= hang+10 {
		return s
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if ansi.StringWidth(l) <= width {
			continue
		}
		first, rest, _ := strings.Cut(ansi.Wordwrap(l, width, " "), "\n")
		rest = ansi.Wordwrap(strings.ReplaceAll(rest, "\n", " "), width-hang, " ")
		lines[i] = first + "\n" + indent(rest, strings.Repeat(" ", hang))
	}
	return strings.Join(lines, "\n")
}

// indent prefixes every line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// fit pads or cuts s to exactly h lines.
func fit(s string, h int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return strings.Join(lines, "\n")
}

// join joins the non-empty parts with " · ".
func join(parts ...string) string {
	var keep []string
	for _, p := range parts {
		if p != "" {
			keep = append(keep, p)
		}
	}
	return strings.Join(keep, " · ")
}

// plural writes "1 line", "2 lines".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return thousands(n) + " " + noun + "s"
}

// thousands writes n with comma separators: 4,096.
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// formatMillis writes a duration for people: 0.4 ms, 40 ms, 2.3 s.
func formatMillis(d time.Duration) string {
	ms := float64(d) / float64(time.Millisecond)
	switch {
	case ms < 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0f ms", ms)
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}
