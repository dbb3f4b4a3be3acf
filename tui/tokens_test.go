package tui

import (
	"slices"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// TestTokenMarks: forced tokens carry no count, restricted ones the number
// allowed as a superscript, free ones nothing; a backtrack drops marks.
func TestTokenMarks(t *testing.T) {
	var marks []tokenMark
	for _, u := range []conversation.Update{
		{Event: engine.Event{Token: 1}, Delta: "free "},
		{Event: engine.Event{Token: 2, Candidates: 12}, Delta: "some"},
		{Event: engine.Event{Token: 3, Forced: true}, Delta: " forced"},
		{Event: engine.Event{Token: 4, Candidates: 3}, Delta: " gone"},
		{Event: engine.Event{Token: -1, Backtrack: 1}},
		{Event: engine.Event{Token: 5, Candidates: 1}, Delta: "\nend"},
	} {
		marks = markTokens(marks, u)
	}
	got := ansi.Strip(renderTokens(DefaultStyles(true), marks, 80))
	if want := "free some¹² forced\nend¹"; got != want {
		t.Errorf("token view %q, want %q", got, want)
	}
}

// TestOverrides: where the controller overrode the model, the token view
// shows the model's top token after the one it got, and the reply counts
// the overrides; a taken-back override no longer counts.
func TestOverrides(t *testing.T) {
	var marks []tokenMark
	for _, u := range []conversation.Update{
		{Event: engine.Event{Token: 1, Candidates: 2, Overrode: true, Wanted: 9}, Delta: "{", Wanted: "Sure"},
		{Event: engine.Event{Token: 2, Candidates: 5}, Delta: `"a"`},
		{Event: engine.Event{Token: 3, Forced: true, Overrode: true, Wanted: 8}, Delta: ":", Wanted: "\n"},
		{Event: engine.Event{Token: 4, Candidates: 3, Overrode: true, Wanted: 7}, Delta: " x", Wanted: " y"},
		{Event: engine.Event{Token: -1, Backtrack: 1}},
	} {
		marks = markTokens(marks, u)
	}
	if got, want := ansi.Strip(renderTokens(DefaultStyles(true), marks, 80)), `{²⟨Sure⟩"a"⁵:⟨⏎⟩`; got != want {
		t.Errorf("token view %q, want %q", got, want)
	}
	if got, want := overrides(marks, false), "the controller overrode 2 of 3 tokens (ctrl+t shows what the model wanted)"; got != want {
		t.Errorf("count %q, want %q", got, want)
	}
	if got, want := overrides(marks, true), "the controller overrode 2 of 3 tokens"; got != want {
		t.Errorf("in the token view: %q, want %q (no hint to open the view it is in)", got, want)
	}
	if got := overrides(marks[1:2], false); got != "" {
		t.Errorf("no override: %q", got)
	}
}

func TestGovernedBy(t *testing.T) {
	for _, c := range []struct {
		rc     []sessions.ReplyControl
		want   string
		reason string
	}{
		{nil, "", "no controller ran"},
		{[]sessions.ReplyControl{{Name: "regex", Arg: "[0-9]+"}}, "under regex [0-9]+", "one controller, with its argument"},
		{[]sessions.ReplyControl{{Name: "abc"}, {From: 4, Name: "bang"}}, "under abc, then bang from token 4", "a switch mid-reply"},
		{[]sessions.ReplyControl{{Name: "json"}, {From: 12, Fault: "json: trapped"}}, "under json, then no controller after a fault (json: trapped) from token 12", "a fault"},
		{[]sessions.ReplyControl{{}, {From: 3, Name: "ban", Arg: "[\"a\",\n\"b\"]"}}, `under no controller, then ban ["a", "b"] from token 3`, "none at first; an argument's newline shown as a space"},
	} {
		if got := governedBy(c.rc); got != c.want {
			t.Errorf("%s: %q, want %q", c.reason, got, c.want)
		}
	}
}

func TestHangWrap(t *testing.T) {
	in := "model       tiny (llama 3 layers, hidden 64, 4/2 heads of 16, vocab 512)\nshort line"
	got := hangWrap(in, 40, 12)
	want := "model       tiny (llama 3 layers, hidden\n            64, 4/2 heads of 16, vocab\n            512)\nshort line"
	if got != want {
		t.Errorf("hangWrap:\n%s\nwant:\n%s", got, want)
	}
	if got := hangWrap(in, 40, 0); got != in {
		t.Errorf("no hang: %q, want the text as it is", got)
	}
}

// TestRegenKeepsItsPlace: a regenerated reply streams where the reply it
// replaces was, not after the notices that followed it.
func TestRegenKeepsItsPlace(t *testing.T) {
	c := &Common{Styles: DefaultStyles(true), Keys: DefaultKeyMap(), Width: 80, Height: 24}
	tr := newTranscript(c, "m")
	tr.SetSize(80, 20)
	tr.add(entryUser, "hi")
	tr.beginReply(false)
	tr.endReply("first", "", nil)
	tr.add(entryInfo, "model  m")
	if !tr.regenerating(false) {
		t.Fatal("no reply to regenerate")
	}
	tr.endReply("second", "", nil)
	var kinds []entryKind
	for _, e := range tr.entries {
		kinds = append(kinds, e.kind)
	}
	if !slices.Equal(kinds, []entryKind{entryUser, entryAssistant, entryInfo}) || tr.entries[1].text != "second" {
		t.Errorf("entries after /regen: %v, reply %q", kinds, tr.entries[1].text)
	}
}
