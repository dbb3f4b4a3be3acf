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
