package controllers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
	"github.com/driftwoodlabs/driftwood/internal/controlrecord"
	"github.com/driftwoodlabs/driftwood/internal/golden"
)

// TestSwitchRefusalChangesNothing: a switch that cannot run (dw_init
// refuses its argument, or a required argument is missing) is refused
// with an error that says why, the previous controller stays active
// (also for the next reply), and the key-value store keeps nothing the
// refused dw_init wrote.
func TestSwitchRefusalChangesNothing(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	nine := h.load(t, "only9", allowOnly(9))
	if err := d.SwitchTo(nine, ""); err != nil {
		t.Fatal(err)
	}
	if err := d.kv.Set("kept", []byte("yes")); err != nil {
		t.Fatal(err)
	}
	before := d.kv.Snapshot()
	refuse := h.load(t, "refuse", only7With(countInit+`(call $log (i32.const 710) (i32.const 20)) (i32.const 1)`, ""))
	needy := h.load(t, "needy", only7With(countInit+`(i32.const 0)`, describeDigit))
	for _, c := range []struct {
		reason string
		mod    *Module
		arg    string
		want   string
	}{
		{"dw_init refuses", refuse, "x", `controller refuse refused its argument "x" (dw_init returned 1): want a digit`},
		{"a required argument is missing", needy, "", "controller needy needs an argument: a digit"},
	} {
		err := d.SwitchTo(c.mod, c.arg)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q", c.reason, err, c.want)
		}
		if cur, _ := d.Current(); cur != nine {
			t.Errorf("%s: %v is active, want only9 still", c.reason, cur)
		}
		if after := d.kv.Snapshot(); len(after) != len(before) || string(after["kept"]) != "yes" {
			t.Errorf("%s: the store changed: %q, was %q", c.reason, after, before)
		}
	}
	if reply, _ := h.replyWith(t, d, 3, 1, 1); !slices.Equal(reply, []int32{9, 9, 9}) {
		t.Errorf("reply %v after the refusals, want only9's", reply)
	}
	if strings.Contains(h.logText(), "want a digit") {
		t.Errorf("the refusal's reason was logged as well as returned: %q", h.logText())
	}
	// The described controller given its argument is switched to.
	if err := d.SwitchTo(needy, "4"); err != nil {
		t.Errorf("needy with an argument: %v", err)
	}
}

// TestSwitchHandsOverTheCheckedInstance: the instance whose dw_init
// passed at the switch is the one that runs the next steps (dw_init runs
// once), and what it wrote to the store is there.
func TestSwitchHandsOverTheCheckedInstance(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	mod := h.load(t, "counted", only7With(countInit+`(i32.const 0)`, ""))
	if err := d.SwitchTo(mod, "x"); err != nil {
		t.Fatal(err)
	}
	checked := d.nextInst
	if v, _ := d.kv.Get("init"); string(v) != "init" {
		t.Errorf("store after the switch holds init=%q, want dw_init's one write", v)
	}
	if reply, _ := h.replyWith(t, d, 4, 1, 1); !slices.Equal(reply, []int32{7, 7, 7, 7}) {
		t.Fatalf("reply %v", reply)
	}
	if d.inst == nil || d.inst != checked {
		t.Error("the reply ran on another instance than the one checked at the switch")
	}
	if v, _ := d.kv.Get("init"); string(v) != "init" {
		t.Errorf("init=%q after the reply: dw_init ran %d times, want once", v, len(v)/4)
	}
	// A second switch before any step closes the first's instance and
	// takes effect alone.
	if err := d.SwitchTo(mod, "y"); err != nil {
		t.Fatal(err)
	}
	first := d.nextInst
	if err := d.SwitchTo(h.load(t, "only9", allowOnly(9)), ""); err != nil {
		t.Fatal(err)
	}
	if first.store != nil {
		t.Error("the instance of a switch that never took effect was not closed")
	}
	if reply, _ := h.replyWith(t, d, 2, 1, 1); !slices.Equal(reply, []int32{9, 9}) {
		t.Errorf("reply %v, want only9's", reply)
	}
}

// TestReplyControls records which controller governed each stretch of a
// reply: none, one from the start, a switch in the middle, a fault; the
// record starts again with each reply. Revocable follows the same
// changes: a controller's whole take-back budget, none once it faulted.
func TestReplyControls(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	seven, nine := h.load(t, "only7", allowOnly(7)), h.load(t, "only9", allowOnly(9))
	trap := h.load(t, "trap", watModule("(i32.const 0)", `(if (i32.eq (global.get $steps) (i32.const 3)) (then unreachable)) (i32.const 0)`, ""))
	budget := defaultLimits().TakeBack
	check := func(reason string, want []controlrecord.ReplyControl) {
		t.Helper()
		if got := d.ReplyControls(); !slices.Equal(got, want) {
			t.Errorf("%s: stretches %+v, want %+v", reason, got, want)
		}
	}

	h.reply(t, d, nil, 3, 1, nil)
	check("no controller", []controlrecord.ReplyControl{{From: 0}})

	d.Use(seven, "a")
	if d.Revocable() != budget {
		t.Errorf("a switch pending: Revocable %d, want %d", d.Revocable(), budget)
	}
	h.reply(t, d, nil, 3, 1, func(int) {
		if d.Revocable() != budget {
			t.Errorf("only7 active: Revocable %d, want %d", d.Revocable(), budget)
		}
	})
	check("only7 from the start", []controlrecord.ReplyControl{{From: 0, Name: "only7", Arg: "a"}})

	reply, _, _ := h.reply(t, d, nil, 8, 1, func(i int) {
		if i == 4 {
			d.Use(nine, "b")
		}
	})
	n7 := 0
	for n7 < len(reply) && reply[n7] == 7 {
		n7++
	}
	check("only9 from the middle", []controlrecord.ReplyControl{{From: 0, Name: "only7", Arg: "a"}, {From: n7, Name: "only9", Arg: "b"}})

	d.Use(trap, "")
	for range 2 { // the next reply gets a fresh instance, which faults the same way
		h.logs = nil
		h.reply(t, d, nil, 5, 1, func(i int) {
			want := 0 // from the faulting third step on
			if i < 3 {
				want = budget
			}
			if d.Revocable() != want {
				t.Errorf("trap, token %d: Revocable %d, want %d", i, d.Revocable(), want)
			}
		})
		fault := "trap: dw_step trapped (unreachable: a panic or abort)"
		check("trap faulting at its third step", []controlrecord.ReplyControl{{From: 0, Name: "trap"}, {From: 2, Fault: fault}})
	}
	d.Off()
	if d.Revocable() != 0 {
		t.Errorf("Off pending: Revocable %d, want 0", d.Revocable())
	}
}

// TestResumeIsChecked: a session's controller comes back through the
// same check as a switch: one that refuses its argument is not turned
// on, and the error says why.
func TestResumeIsChecked(t *testing.T) {
	tok, err := tokenizer.Load(filepath.Join(golden.ModelDir("tiny-f32"), "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, wat := range map[string]string{
		"refuse": only7With(`(call $log (i32.const 710) (i32.const 20)) (i32.const 1)`, ""),
		"good":   allowOnly(7),
	} {
		if err := os.WriteFile(filepath.Join(dir, name+".wat"), []byte(wat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := NewHost(tok, 512, HostOptions{Dirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Resume(controlrecord.Controller{Name: "refuse", Arg: "x"}); err == nil || !strings.Contains(err.Error(), "want a digit") {
		t.Errorf("resuming a controller that refuses its argument: %v, want its reason", err)
	}
	if run, ok := h.Running(); ok {
		t.Errorf("%s runs after a refused resume", run.Name)
	}
	if sha, err := h.Resume(controlrecord.Controller{Name: "good"}); err != nil || sha == "" {
		t.Errorf("resuming good: %q, %v", sha, err)
	}
	if run, ok := h.Running(); !ok || run.Name != "good" {
		t.Errorf("running %+v, %v; want good", run, ok)
	}
}
