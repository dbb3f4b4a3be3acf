package controllers

import (
	"fmt"
	"strings"
)

// maxReasonLines is how many of the lines a refused start logged its
// error quotes (the last ones: a refusal's reason comes last).
const maxReasonLines = 3

// SwitchTo makes mod, with its argument, the active controller from the
// next step on, after checking that it can run: it refuses an empty
// argument that the controller describes as required (Module.Describe),
// then starts an instance (a spare prepared in the background when there
// is one) and runs its dw_init with arg. Only when that succeeds does mod
// replace the active controller, and its next step runs on that very
// instance, so the check costs the switch nothing.
//
// # Errors
//
// When mod is refused, nothing changes: the previous controller stays
// active, and the key-value store keeps none of what the refused dw_init
// wrote (it runs against a staged copy, whose writes are applied only
// when it succeeds). The error says what was refused and why: the
// guest's own last log lines, and the argument the controller takes when
// it describes it. The lines a successful start logged go to the log as
// usual.
func (d *driver) SwitchTo(mod *Module, arg string) error {
	if arg == "" {
		if doc, required, _ := mod.Describe(); required {
			return fmt.Errorf("controller %s needs an argument: %s", mod.Name, doc)
		}
	}
	if note := mod.notice.Swap(nil); note != nil && d.logf != nil {
		d.logf(Log{Controller: mod.Name, Text: *note})
	}
	var lines []string
	staged := d.kv.stage()
	in, err := d.rt.newInstance(mod, d.vocab, arg, staged, func(line string) { lines = append(lines, line) })
	if err == nil {
		if err = d.kv.commit(staged); err != nil {
			in.close()
			err = fmt.Errorf("controller %s: what its dw_init wrote to the key-value store no longer fits: %w", mod.Name, err)
		}
	}
	if err != nil {
		doc, _, _ := mod.Describe()
		return refusal(mod, err, lines, doc)
	}
	logf := d.logTo(mod)
	for _, l := range lines {
		logf(l)
	}
	in.state.kv, in.state.logf = d.kv, logf
	d.hand(mod, arg, in)
	return nil
}

// refusal is the error of a start that failed with err, after the guest
// logged lines: err, then the last lines (without the "NAME: " a guest
// often starts them with), then what argument the controller takes.
func refusal(mod *Module, err error, lines []string, doc string) error {
	msg := err.Error()
	if len(lines) > 0 {
		said := make([]string, 0, maxReasonLines)
		for _, l := range lines[max(0, len(lines)-maxReasonLines):] {
			said = append(said, strings.TrimPrefix(l, mod.Name+": "))
		}
		msg += ": " + strings.Join(said, "; ")
	}
	if doc != "" {
		msg += " (" + mod.Name + " takes " + doc + ")"
	}
	return fmt.Errorf("%s", msg)
}

// logTo returns the log of an instance of mod: its lines go to the
// driver's log under mod's name, without the "NAME: " a controller often
// starts them with.
func (d *driver) logTo(mod *Module) func(string) {
	return func(line string) {
		if d.logf != nil {
			d.logf(Log{Controller: mod.Name, Text: strings.TrimPrefix(line, mod.Name+": ")})
		}
	}
}
