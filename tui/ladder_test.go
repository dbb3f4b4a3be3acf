package tui

import (
	"testing"
	"time"
)

// TestLadder presses Ctrl+C in sequences of situations.
func TestLadder(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type press struct {
		at                 time.Duration // after t0
		hasInput, replying bool
		want               interrupt
	}
	tests := []struct {
		reason  string
		presses []press
	}{
		{"text in the input is cleared first, even while a reply runs", []press{
			{0, true, true, interruptClear},
			{time.Second, false, true, interruptStop},
		}},
		{"a running reply is stopped, not the program", []press{
			{0, false, true, interruptStop},
			{100 * time.Millisecond, false, true, interruptStop},
		}},
		{"when idle, the first press arms and a second within 2 s quits", []press{
			{0, false, false, interruptArm},
			{1900 * time.Millisecond, false, false, interruptQuit},
		}},
		{"a second press after 2 s arms again", []press{
			{0, false, false, interruptArm},
			{2100 * time.Millisecond, false, false, interruptArm},
			{2500 * time.Millisecond, false, false, interruptQuit},
		}},
		{"clearing the input disarms", []press{
			{0, false, false, interruptArm},
			{time.Second, true, false, interruptClear},
			{1500 * time.Millisecond, false, false, interruptArm},
		}},
		{"stopping a reply disarms", []press{
			{0, false, false, interruptArm},
			{time.Second, false, true, interruptStop},
			{1500 * time.Millisecond, false, false, interruptArm},
		}},
	}
	for _, tt := range tests {
		var l ladder
		for i, p := range tt.presses {
			if got := l.press(t0.Add(p.at), p.hasInput, p.replying); got != p.want {
				t.Errorf("%s: press %d gives %d, want %d", tt.reason, i+1, got, p.want)
			}
		}
	}
}

// TestLadderDisarm: any other key between two presses means the second
// one only arms.
func TestLadderDisarm(t *testing.T) {
	var l ladder
	t0 := time.Unix(1000, 0)
	l.press(t0, false, false)
	if !l.isArmed(t0.Add(time.Second)) || l.isArmed(t0.Add(3*time.Second)) {
		t.Error("armed for the wrong span")
	}
	l.disarm()
	if got := l.press(t0.Add(time.Second), false, false); got != interruptArm {
		t.Errorf("after another key: %d, want arm", got)
	}
}
