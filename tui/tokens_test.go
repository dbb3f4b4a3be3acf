package tui

import (
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/engine"
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
	if got, want := overrides(marks), "the controller overrode 2 of 3 tokens (ctrl+t shows what the model wanted)"; got != want {
		t.Errorf("count %q, want %q", got, want)
	}
	if got := overrides(marks[1:2]); got != "" {
		t.Errorf("no override: %q", got)
	}
}
