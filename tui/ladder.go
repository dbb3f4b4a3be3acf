package tui

import "time"

// quitWindow is how soon a second Ctrl+C must follow the first to quit.
const quitWindow = 2 * time.Second

// interrupt is what one press of Ctrl+C does.
type interrupt int

const (
	// interruptClear clears the text in the input.
	interruptClear interrupt = iota
	// interruptStop stops the reply being generated, keeping what it said.
	interruptStop
	// interruptArm asks for a second press to quit.
	interruptArm
	// interruptQuit quits.
	interruptQuit
)

// ladder is the Ctrl+C ladder: each press does the mildest thing that
// applies. With text in the input it clears it; while a reply runs
// (prompt processing included) it stops the reply; otherwise the first
// press arms and a second one within quitWindow quits.
type ladder struct {
	armed time.Time // zero: not armed
}

// press returns what a Ctrl+C at now does.
func (l *ladder) press(now time.Time, hasInput, replying bool) interrupt {
	switch {
	case hasInput:
		l.armed = time.Time{}
		return interruptClear
	case replying:
		l.armed = time.Time{}
		return interruptStop
	case !l.armed.IsZero() && now.Sub(l.armed) <= quitWindow:
		return interruptQuit
	}
	l.armed = now
	return interruptArm
}

// isArmed reports whether a press at now would quit.
func (l *ladder) isArmed(now time.Time) bool {
	return !l.armed.IsZero() && now.Sub(l.armed) <= quitWindow
}

// disarm forgets an earlier press (any other key does this).
func (l *ladder) disarm() { l.armed = time.Time{} }
