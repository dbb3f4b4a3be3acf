package tui

import (
	"strings"

	"github.com/driftwoodlabs/driftwood/engine/chat"
)

// replyBody draws a reply's text: its think block, then its answer as
// Markdown. The block streams in full while the model thinks; once it
// has ended it folds to one line, unless the thinking is shown (ctrl+o).
// It returns "" while there is nothing to show yet.
func (t *transcript) replyBody(e *entry, text string) string {
	th := chat.SplitThinking(text, e.live)
	if e.opened && !th.Block {
		th = chat.SplitThinking(chat.ThinkOpen+text, e.live)
	}
	var parts []string
	if th.Block && (th.Thinking != "" || th.Open && e.live) {
		parts = append(parts, t.thinkingView(th, e.live))
	}
	if th.Answer != "" {
		parts = append(parts, e.md.render(t.md, th.Answer))
	}
	return strings.Join(parts, "\n")
}

// thinkingView is a think block: "thinking…" and the text while it
// streams; when it has ended, a line saying how long it was, with the
// text under it when the thinking is shown.
func (t *transcript) thinkingView(th chat.Thought, live bool) string {
	st, w := t.common.Styles, t.md.width-2
	text := func() string { return indent(st.ThinkingText.Width(w).Render(th.Thinking), "  ") }
	if th.Open && live {
		head := "  " + st.ThinkingLabel.Render("thinking…")
		if th.Thinking == "" {
			return head
		}
		return head + "\n" + text()
	}
	what := "thought"
	if th.Open {
		what = "thought, unfinished"
	}
	what += " · " + plural(len(strings.Fields(th.Thinking)), "word")
	if !t.showThinking {
		return "  " + st.ThinkingLabel.Render("▸ "+what+" · "+t.common.Keys.Thinking.Help().Key+" shows it")
	}
	return "  " + st.ThinkingLabel.Render("▾ "+what) + "\n" + text()
}

// answer is a reply without its think block (what /copy copies).
func answer(text string) string { return chat.SplitThinking(text, false).Answer }

// hasThinking reports whether a reply in the transcript has a think
// block.
func (t *transcript) hasThinking() bool {
	for _, e := range t.entries {
		if e.kind == entryAssistant && (e.opened || chat.SplitThinking(e.text, e.live).Block) {
			return true
		}
	}
	return false
}

// toggleThinking shows or folds the think blocks of the replies.
func (t *transcript) toggleThinking() {
	t.showThinking = !t.showThinking
	t.invalidate(true)
	t.refresh()
}
