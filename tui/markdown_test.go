package tui

import (
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

func TestBlockEnd(t *testing.T) {
	tests := []struct {
		text   string
		from   int
		want   int
		reason string
	}{
		{"one paragraph", 0, 0, "no blank line: nothing is finished"},
		{"para one\n\npara two", 0, 10, "a new block after a blank line"},
		{"a\n\nb\n\nc", 0, 6, "the last block start wins"},
		{"a\n\nb\n\nc", 6, 6, "from the given offset"},
		{"```\ncode\n\nmore\n", 0, 0, "a blank line inside an open fence is no boundary"},
		{"```\ncode\n\nmore\n```\n\nafter", 0, 20, "after the fence closes, it is"},
		{"- item\n\n  continued", 0, 0, "an indented line continues a list item"},
		{"text\n\n", 0, 0, "the next block has not started"},
		{"~~~\nx\n~~~\n\n# Title", 0, 11, "tilde fences too"},
	}
	for _, tt := range tests {
		if got := blockEnd(tt.text, tt.from); got != tt.want {
			t.Errorf("%s\nblockEnd(%q, %d) = %d, want %d", tt.reason, tt.text, tt.from, got, tt.want)
		}
	}
}

// TestMarkdownStream: rendering a text as it grows, one byte at a time,
// ends with the same screen as rendering it whole, and the finished
// blocks are rendered once.
func TestMarkdownStream(t *testing.T) {
	md := newMarkdown("dark", 60)
	text := "# Plan\n\nFirst **bold** step, then a list:\n\n- one\n- two\n\n```go\nfunc main() {\n\n\tprintln(1)\n}\n```\n\nDone."
	var s mdStream
	for i := 1; i < len(text); i++ {
		s.render(md, text[:i])
	}
	got := s.render(md, text)
	var whole mdStream
	if want := whole.render(md, text); got != want {
		t.Errorf("streamed:\n%s\nwhole:\n%s", got, want)
	}
	if len(s.blocks) != 4 {
		t.Errorf("%d finished blocks, want 4 (heading, paragraph, list, code)", len(s.blocks))
	}
	for _, want := range []string{"Plan", "• one", "func main() {", "println(1)", "Done."} {
		if !strings.Contains(ansi.Strip(got), want) {
			t.Errorf("rendering lacks %q:\n%s", want, ansi.Strip(got))
		}
	}
	// A backtrack into a finished block starts over.
	if out := s.render(md, "# Pl"); !strings.Contains(ansi.Strip(out), "Pl") || len(s.blocks) != 0 {
		t.Errorf("after a backtrack: %q, %d blocks", ansi.Strip(out), len(s.blocks))
	}
}

func TestTidy(t *testing.T) {
	in := "\n  \x1b[1mhi\x1b[m   \n\n  there  \n\n"
	want := "  \x1b[1mhi\x1b[m" + ansi.ResetStyle + "\n\n  there" + ansi.ResetStyle
	if got := tidy(in); got != want {
		t.Errorf("tidy(%q) = %q, want %q", in, got, want)
	}
}

func TestSanitize(t *testing.T) {
	if got := sanitize("a\x1b]52;c;aGk=\x07b\n\tc"); got != "a\uFFFD]52;c;aGk=\uFFFDb\n\tc" {
		t.Errorf("sanitize = %q", got)
	}
}
