package tui

import (
	"fmt"
	"slices"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine/chat"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// entryKind is what a transcript entry shows.
type entryKind int

const (
	entryUser entryKind = iota
	entryAssistant
	entrySystem
	entryInfo
	entryError
)

// entry is one block of the transcript.
type entry struct {
	kind entryKind
	text string
	// marks are the reply's tokens as the controller shaped them (only
	// for replies generated in this run).
	marks []tokenMark
	// note is shown under a reply that ended early; governed says which
	// controllers governed it, shown in the token view.
	note     string
	governed []sessions.ReplyControl
	live     bool // the reply being generated
	// opened says the prompt opened the reply's think block, so that the
	// reply has only its </think>.
	opened bool
	// viewMark marks the line under the messages the model no longer
	// sees (transcript.markView).
	viewMark bool
	// hang is how far an info entry's wrapped lines are indented, so
	// that they line up under their value rather than at the margin.
	hang int
	md   mdStream
	out  string // the rendering, valid unless stale
	// stale marks out as out of date.
	stale bool
}

// transcript is the scrolling conversation: user messages, replies
// rendered as Markdown while they stream, and notices from commands. The
// view stays where the user scrolled to unless it was at the bottom.
type transcript struct {
	common    *Common
	vp        viewport.Model
	entries   []*entry
	tokenView bool
	// showThinking unfolds the think blocks of finished replies.
	showThinking bool
	// label names the assistant (the model).
	label string
	md    *markdown
}

// newTranscript starts an empty transcript whose replies are labelled
// with the model's name.
func newTranscript(c *Common, label string) transcript {
	vp := viewport.New()
	vp.KeyMap = viewport.KeyMap{}
	return transcript{common: c, vp: vp, label: label}
}

// SetSize sizes the transcript; a new width renders everything again.
func (t *transcript) SetSize(w, h int) {
	h = max(h, 1)
	if t.md != nil && t.vp.Width() == w && t.vp.Height() == h {
		return
	}
	if t.md == nil || t.md.width != t.textWidth(w) {
		t.md = newMarkdown(t.common.Styles.Markdown, t.textWidth(w))
		t.invalidate(false)
	}
	follow := t.atBottom()
	t.vp.SetWidth(w)
	t.vp.SetHeight(h)
	t.refresh()
	if follow {
		t.vp.GotoBottom()
	}
}

// Height is the transcript's height in lines.
func (t *transcript) Height() int { return t.vp.Height() }

// atBottom reports whether the end of the transcript is in view.
func (t *transcript) atBottom() bool {
	return t.vp.AtBottom() || t.vp.TotalLineCount() <= t.vp.Height()
}

// textWidth is the width of an entry's text for a transcript w wide.
func (t *transcript) textWidth(w int) int { return max(w-2, 10) }

// restyle renders everything again with new styles.
func (t *transcript) restyle() {
	t.md = newMarkdown(t.common.Styles.Markdown, t.textWidth(t.vp.Width()))
	t.invalidate(false)
	t.refresh()
}

// Update scrolls the transcript.
func (t *transcript) Update(msg tea.Msg) tea.Cmd {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, t.common.Keys.ScrollUp):
			t.vp.PageUp()
		case key.Matches(k, t.common.Keys.ScrollDown):
			t.vp.PageDown()
		}
	}
	return nil
}

// View is the visible part of the transcript.
func (t *transcript) View() string { return t.vp.View() }

// add appends an entry.
func (t *transcript) add(kind entryKind, text string) { t.addHanging(kind, text, 0) }

// addHanging appends an entry whose long lines wrap with their
// continuation indented by hang columns (a table of names and values).
func (t *transcript) addHanging(kind entryKind, text string, hang int) {
	t.entries = append(t.entries, &entry{kind: kind, text: text, hang: hang, stale: true})
	t.refresh()
}

// reset shows a conversation's messages (after /new or /load), marking
// where the model's view starts when outOfView of them left it; controls
// are the controllers of each reply (conversation.ReplyControls).
func (t *transcript) reset(msgs []chat.Message, outOfView int, controls [][]sessions.ReplyControl) {
	t.entries = nil
	replies := 0
	for _, m := range msgs {
		e := &entry{kind: entryUser, text: m.Content, stale: true}
		switch m.Role {
		case "system":
			e.kind = entrySystem
		case "assistant":
			e.kind = entryAssistant
			if replies < len(controls) {
				e.governed = controls[replies]
			}
			replies++
		}
		t.entries = append(t.entries, e)
	}
	t.markView(msgs, outOfView)
	t.vp.GotoBottom()
}

// markView draws a line under the messages the model no longer sees (the
// oldest outOfView of msgs after the system prompt), in place of the line
// drawn before; none when the model sees them all.
func (t *transcript) markView(msgs []chat.Message, outOfView int) {
	t.entries = slices.DeleteFunc(t.entries, func(e *entry) bool { return e.viewMark })
	if outOfView > 0 {
		first := outOfView // the index of the first message in view
		if len(msgs) > 0 && msgs[0].Role == "system" {
			first++
		}
		at, n := len(t.entries), 0
		for i, e := range t.entries {
			if e.kind == entryUser || e.kind == entryAssistant || e.kind == entrySystem {
				if n == first {
					at = i
					break
				}
				n++
			}
		}
		text := fmt.Sprintf("▲ the model no longer sees the %s above (the transcript and the session keep them)", plural(outOfView, "message"))
		t.entries = slices.Insert(t.entries, at, &entry{kind: entryInfo, text: text, viewMark: true, stale: true})
	}
	t.refresh()
}

// setSystem shows the system prompt ("" hides it) as the first entry.
func (t *transcript) setSystem(text string) {
	if len(t.entries) > 0 && t.entries[0].kind == entrySystem {
		t.entries = t.entries[1:]
	}
	if text != "" {
		t.entries = append([]*entry{{kind: entrySystem, text: text, stale: true}}, t.entries...)
	}
	t.refresh()
}

// beginReply adds the entry that the reply streams into and scrolls to
// it; opened says the prompt opens the reply's think block.
func (t *transcript) beginReply(opened bool) {
	t.entries = append(t.entries, &entry{kind: entryAssistant, live: true, opened: opened, stale: true})
	t.refresh()
	t.vp.GotoBottom()
}

// live is the reply being generated, or nil.
func (t *transcript) live() *entry {
	if i := t.liveAt(); i >= 0 {
		return t.entries[i]
	}
	return nil
}

// liveAt is the index of the reply being generated, or -1. It is the
// last entry, or, for a regeneration, where the reply it replaces was.
func (t *transcript) liveAt() int {
	for i := len(t.entries) - 1; i >= 0; i-- {
		if t.entries[i].live {
			return i
		}
	}
	return -1
}

// stream takes the updates that arrived into the live reply. Its text
// and its token marks are the only copy of the reply the program keeps
// while it streams: each token adds its mark and its delta; a backtrack
// drops the marks taken back, and the text becomes the conversation's,
// decoded again.
func (t *transcript) stream(us []conversation.Update) {
	e := t.live()
	if e == nil || len(us) == 0 {
		return
	}
	for _, u := range us {
		e.marks = markTokens(e.marks, u)
		if u.Event.Backtrack > 0 {
			e.text = u.Text
		} else {
			e.text += u.Delta
		}
	}
	e.stale = true
	t.refresh()
}

// liveTokens counts the tokens of the live reply (0: none).
func (t *transcript) liveTokens() int {
	if e := t.live(); e != nil {
		return len(e.marks)
	}
	return 0
}

// endReply settles the live reply on its final text, with the
// controllers that governed it.
func (t *transcript) endReply(text, note string, governed []sessions.ReplyControl) {
	if e := t.live(); e != nil {
		e.live, e.text, e.note, e.governed, e.stale = false, text, note, governed, true
		t.refresh()
	}
}

// unsend removes the live reply of a message the conversation refused,
// and the message too when there was one (else it was a regeneration, and
// the reply it was to replace comes back from msgs).
func (t *transcript) unsend(message bool, msgs []chat.Message) {
	at := t.liveAt()
	if at < 0 {
		t.refresh()
		return
	}
	if n := len(msgs); !message && n > 0 && msgs[n-1].Role == "assistant" {
		t.entries[at] = &entry{kind: entryAssistant, text: msgs[n-1].Content, stale: true}
	} else {
		t.entries = slices.Delete(t.entries, at, at+1)
		if message && at > 0 && t.entries[at-1].kind == entryUser {
			t.entries = slices.Delete(t.entries, at-1, at)
		}
	}
	t.refresh()
}

// regenerating makes the last reply the live one, emptied, where it
// stands (notices after it stay after it); opened says the prompt opens
// its think block. It reports false when there is no reply.
func (t *transcript) regenerating(opened bool) bool {
	for i := len(t.entries) - 1; i >= 0; i-- {
		if t.entries[i].kind == entryAssistant {
			t.entries[i] = &entry{kind: entryAssistant, live: true, opened: opened, stale: true}
			t.refresh()
			return true
		}
	}
	return false
}

// lastReply is the text of the last finished reply.
func (t *transcript) lastReply() (string, bool) {
	for i := len(t.entries) - 1; i >= 0; i-- {
		if e := t.entries[i]; e.kind == entryAssistant && !e.live {
			return e.text, true
		}
	}
	return "", false
}

// toggleTokens switches between Markdown and the per-token view.
func (t *transcript) toggleTokens() {
	t.tokenView = !t.tokenView
	t.invalidate(true)
	t.refresh()
}

// invalidate marks the renderings stale (only the replies' if replies).
func (t *transcript) invalidate(replies bool) {
	for _, e := range t.entries {
		if !replies || e.kind == entryAssistant {
			e.stale = true
			e.md = mdStream{}
		}
	}
}

// refresh renders the stale entries and updates the viewport, following
// the end of the transcript only when the user has not scrolled up.
func (t *transcript) refresh() {
	if t.md == nil {
		return
	}
	follow := t.atBottom()
	parts := make([]string, 0, len(t.entries)+1)
	if t.tokenView {
		parts = append(parts, tokenLegend(t.common.Styles))
	}
	for _, e := range t.entries {
		if e.stale {
			e.out, e.stale = t.render(e), false
		}
		parts = append(parts, e.out)
	}
	t.vp.SetContent(strings.Join(parts, "\n\n"))
	if follow {
		t.vp.GotoBottom()
	}
}

// render draws one entry.
func (t *transcript) render(e *entry) string {
	st, w, text := t.common.Styles, t.md.width, sanitize(e.text)
	switch e.kind {
	case entryUser:
		return st.UserLabel.Render("You") + "\n" + st.UserText.Width(w).Render(text)
	case entrySystem:
		return st.SystemText.Width(w).Render("system prompt: " + text)
	case entryInfo:
		return st.Info.Width(w).Render(hangWrap(text, w-st.Info.GetHorizontalFrameSize(), e.hang))
	case entryError:
		return st.Error.Width(w).Render(text)
	}
	var body string
	if t.tokenView && len(e.marks) > 0 {
		body = indent(renderTokens(st, e.marks, w-2), "  ")
	} else {
		body = t.replyBody(e, text)
	}
	if e.live && body == "" {
		body = st.ReplyNote.Render("  …")
	}
	out := st.AssistantLabel.Render(t.label)
	if body != "" {
		out += "\n" + body
	}
	if e.note != "" {
		out += "\n" + st.ReplyNote.Render("  "+e.note)
	}
	if o := overrides(e.marks, t.tokenView); o != "" && !e.live {
		out += "\n" + st.ReplyNote.Render("  "+o)
	}
	if g := governedBy(e.governed); t.tokenView && g != "" && !e.live {
		out += "\n" + st.ReplyNote.Width(w).Render("  "+g)
	}
	return out
}
