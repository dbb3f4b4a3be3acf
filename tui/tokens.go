package tui

import (
	"fmt"
	"strconv"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/driftwoodlabs/driftwood/conversation"
	"github.com/driftwoodlabs/driftwood/sessions"
)

// tokenMark is one generated token as the controller shaped it.
type tokenMark struct {
	text   string
	forced bool
	// allowed is how many tokens the controller allowed at the step that
	// sampled this one (0: it did not restrict the step).
	allowed int
	// overrode says the controller kept the model from its top token,
	// whose text is wanted.
	overrode bool
	wanted   string
}

// markTokens applies one update to the marks of a reply: a backtrack
// drops the tokens taken back, a token adds a mark.
func markTokens(marks []tokenMark, u conversation.Update) []tokenMark {
	if b := u.Event.Backtrack; b > 0 {
		marks = marks[:max(len(marks)-b, 0)]
	}
	if u.Event.Token >= 0 {
		marks = append(marks, tokenMark{text: u.Delta, forced: u.Event.Forced, allowed: u.Event.Candidates, overrode: u.Event.Overrode, wanted: u.Wanted})
	}
	return marks
}

// renderTokens shows a reply token by token: forced tokens in one style,
// restricted ones in another followed by how many tokens were allowed
// (as a superscript), free ones plain.
func renderTokens(st *Styles, marks []tokenMark, width int) string {
	var b strings.Builder
	for _, t := range marks {
		style := lipgloss.NewStyle()
		switch {
		case t.forced:
			style = st.TokenForced
		case t.allowed > 0:
			style = st.TokenMasked
		}
		for i, part := range strings.Split(sanitize(t.text), "\n") {
			if i > 0 {
				b.WriteByte('\n')
			}
			if part != "" {
				b.WriteString(style.Render(part))
			}
		}
		if !t.forced && t.allowed > 0 {
			b.WriteString(st.TokenCount.Render(superscript(t.allowed)))
		}
		if t.overrode {
			b.WriteString(st.TokenWanted.Render("⟨" + strings.ReplaceAll(sanitize(t.wanted), "\n", "⏎") + "⟩"))
		}
	}
	return lipgloss.Wrap(b.String(), width, "")
}

// overrides says how many of a reply's tokens the controller chose over
// the model's top token ("" when none); outside the token view it says
// where to see them.
func overrides(marks []tokenMark, tokenView bool) string {
	n := 0
	for _, t := range marks {
		if t.overrode {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	text := fmt.Sprintf("the controller overrode %d of %s", n, plural(len(marks), "token"))
	if !tokenView {
		text += " (ctrl+t shows what the model wanted)"
	}
	return text
}

// governedBy says which controllers governed a reply, stretch by stretch
// ("" when none did): "under regex [0-9]+", "under abc, then bang from
// token 4".
func governedBy(rc []sessions.ReplyControl) string {
	var parts []string
	for i, s := range rc {
		what := "no controller"
		switch {
		case s.Fault != "":
			what = "no controller after a fault (" + s.Fault + ")"
		case s.Name != "":
			what = s.Name
			if s.Arg != "" {
				what += " " + ansi.Truncate(strings.ReplaceAll(s.Arg, "\n", " "), 40, "…")
			}
		}
		if i > 0 {
			what += fmt.Sprintf(" from token %d", s.From)
		}
		parts = append(parts, what)
	}
	if len(parts) == 0 {
		return ""
	}
	return "under " + sanitize(strings.Join(parts, ", then "))
}

// tokenLegend explains the token view.
func tokenLegend(st *Styles) string {
	return st.TokenLegend.Render("token view: ") + st.TokenForced.Render("forced") +
		st.TokenLegend.Render(" · ") + st.TokenMasked.Render("restricted") + st.TokenCount.Render("ⁿ") +
		st.TokenLegend.Render(" (n tokens allowed) · ") + st.TokenWanted.Render("⟨wanted⟩") +
		st.TokenLegend.Render(": the model's top token, overridden · plain: free choice")
}

// superscript writes n in superscript digits.
func superscript(n int) string {
	const digits = "⁰¹²³⁴⁵⁶⁷⁸⁹"
	sup := []rune(digits)
	var b strings.Builder
	for _, d := range strconv.Itoa(n) {
		b.WriteRune(sup[d-'0'])
	}
	return b.String()
}
