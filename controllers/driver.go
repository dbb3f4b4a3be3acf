package controllers

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/controlrecord"
)

// sparseLimit is the most allowed tokens for which the driver hands the
// sampler a list instead of masking the whole vocabulary.
const sparseLimit = 64

// driver runs one conversation's controller inside the decode loop. It
// implements engine.Hook: Begin hands the step to a worker goroutine that
// calls the guest while the backend computes the logits; End waits for it
// and applies the result, reading the mask in place from the guest's
// memory. The controller can be switched at any time (SwitchTo, Use,
// Off), also in the middle of a reply. Close stops the worker.
type driver struct {
	rt    *wasmRuntime
	vocab *vocabulary
	kv    *kvStore
	logf  func(Log)
	reg   *registry // nil: no reloading

	mu       sync.Mutex
	next     *Module // set by SwitchTo/Use/Off, taken by the worker
	nextArg  string
	nextInst *instance // started by SwitchTo for next; nil: the worker starts one
	swapped  bool
	// controls are the stretches of the reply begun at StartReply, each
	// under one controller (ReplyControls).
	controls []controlrecord.ReplyControl

	req     chan []int32
	resp    chan outcome
	done    chan struct{} // closed when the worker has stopped
	pending bool          // a step is in flight
	allowed []int32

	// Owned by the worker goroutine (and by StartReply, which is only
	// called between steps).
	mod        *Module
	arg        string
	inst       *instance
	told       int     // tokens of the sequence the instance has been given
	seen       []int32 // those tokens
	replyStart int
	maxSteps   int  // steps this reply may take (guestLimits.ReplySteps)
	steps      int  // steps of this reply the controller has taken
	takenBack  int  // tokens of this reply it has taken back
	disabled   bool // faulted during this reply
	spare      bool // a spare of this instance's module was asked for
}

type outcome struct {
	active bool
	res    stepResult
}

var _ engine.Hook = (*driver)(nil)

// newDriver returns a driver with no controller active. kv is the
// conversation's store (sessions restore it); logf receives log lines and
// faults (it is called from the worker goroutine); reg, when not nil,
// supplies newer builds of a module whose file changed.
func newDriver(rt *wasmRuntime, vocab *vocabulary, kv *kvStore, reg *registry, logf func(Log)) *driver {
	d := &driver{rt: rt, vocab: vocab, kv: kv, logf: logf, reg: reg,
		req: make(chan []int32, 1), resp: make(chan outcome, 1), done: make(chan struct{}), allowed: make([]int32, 0, sparseLimit)}
	go d.worker()
	return d
}

// Use makes mod, with its argument, the active controller from the next
// step on (the current reply's tokens so far are replayed to it). It
// checks nothing: an argument that dw_init refuses disables the
// controller at that step, the previous one already gone. Front-ends
// switch with SwitchTo (or Host.Switch), which refuses up front.
func (d *driver) Use(mod *Module, arg string) {
	if mod != nil {
		d.rt.spares.prewarm(mod, d.vocab) // ready, most often, by the next step
	}
	d.hand(mod, arg, nil)
}

// hand makes mod, with arg, the controller of the next step; in, when not
// nil, is its instance, started already.
func (d *driver) hand(mod *Module, arg string, in *instance) {
	d.mu.Lock()
	old := d.nextInst
	d.next, d.nextArg, d.nextInst, d.swapped = mod, arg, in, true
	d.mu.Unlock()
	if old != nil { // a switch that never took effect
		old.close()
	}
}

// Off deactivates the controller from the next step on.
func (d *driver) Off() { d.Use(nil, "") }

// Current returns the active (or about to be active) controller module
// and its argument; mod is nil when none.
func (d *driver) Current() (mod *Module, arg string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.swapped {
		return d.next, d.nextArg
	}
	return d.mod, d.arg
}

// Close stops the worker and drops the instance; it returns when both are
// done. The driver must not be used afterwards.
func (d *driver) Close() {
	close(d.req)
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nextInst != nil {
		d.nextInst.close()
		d.nextInst = nil
	}
}

// StartReply is called by the decode loop before a reply whose first
// token will be at position start and which may keep at most limit
// tokens; a controller disabled by a fault in the previous reply gets a
// fresh instance. The reply's steps and take-backs are counted from here
// (guestLimits.ReplySteps, guestLimits.TakeBack).
func (d *driver) StartReply(start, limit int) {
	d.replyStart = start
	d.maxSteps = 2*limit + d.rt.limits.ReplySteps
	d.disabled = false
	d.steps, d.takenBack = 0, 0
	at := controlrecord.ReplyControl{}
	if d.mod != nil {
		at.Name, at.Arg = d.mod.Name, d.arg
	}
	d.mu.Lock()
	d.controls = append(d.controls[:0], at)
	d.mu.Unlock()
}

// ReplyControls returns the stretches of the reply begun at the last
// StartReply (so far, while it runs), in order, each under one
// controller: the first, From 0, names the controller active at the
// reply's start (Name "" for none); a switch adds one From the number of
// reply tokens at the step where it took effect, and a fault one with
// Name "" and Fault set ("NAME: reason"). A stretch that a later one
// replaced at the same token is left out. The slice is a copy.
func (d *driver) ReplyControls() []controlrecord.ReplyControl {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.controls)
}

// stretch records that c governs the reply from its n-th token on. It
// runs on a switch or a fault only, never per token.
func (d *driver) stretch(n int, c controlrecord.ReplyControl) {
	c.From = n
	d.mu.Lock()
	defer d.mu.Unlock()
	if last := len(d.controls) - 1; last >= 0 && d.controls[last].From == n {
		d.controls = d.controls[:last] // it governed no token
	}
	d.controls = append(d.controls, c)
}

// Revocable is how many of the reply's last tokens a controller may
// still take back: 0 when none is active and none is about to be, or
// when the active one was switched off for the rest of the reply (or is
// about to be); otherwise what is left of the reply's take-back budget
// (guestLimits.TakeBack), the whole of it when a switch is pending (a new
// controller's budget is whole). The reply's text before those tokens is
// final: a printer may show it as such. Call it between steps, as the
// decode loop's events are.
func (d *driver) Revocable() int {
	d.mu.Lock()
	swapped, next := d.swapped, d.next
	d.mu.Unlock()
	switch {
	case swapped && next != nil:
		return d.rt.limits.TakeBack
	case swapped, d.mod == nil, d.disabled:
		return 0
	}
	return d.rt.limits.TakeBack - d.takenBack
}

// Begin implements engine.Hook.
func (d *driver) Begin(tokens []int32) {
	d.pending = true
	d.req <- tokens
}

// End implements engine.Hook.
func (d *driver) End(logits []float32) engine.Directive {
	dir := engine.Directive{Temperature: -1}
	if !d.pending {
		return dir
	}
	d.pending = false
	o := <-d.resp
	if !o.active {
		return dir
	}
	r := &o.res
	if r.flags&abi.FlagTemperature != 0 {
		dir.Temperature = float64(r.temperature)
	}
	dir.Backtrack, dir.Force, dir.Stop = r.backtrack, r.force, r.flags&abi.FlagStop != 0
	if r.mask != nil {
		dir.Allowed, dir.Mask, dir.Candidates = d.applyMask(logits, r.mask)
		dir.MaskPages = r.maskPages
	}
	return dir
}

// applyMask turns the guest's mask into the directive's restriction: the
// mask itself, read in place (by the host's sampler, which then touches
// only the allowed tokens' logits, or mapped by a device that samples),
// and also a list when few tokens are allowed, which the host's sampler
// reads instead. count is the number of allowed tokens.
func (d *driver) applyMask(logits []float32, mask []uint32) (allowed []int32, dense []uint32, count int) {
	words := min(len(mask), abi.MaskWords(len(logits)))
	for i, w := range mask[:words] {
		if rem := len(logits) - i*32; rem < 32 {
			w &= 1<<rem - 1 // bits past the vocabulary do not count
		}
		count += bits.OnesCount32(w)
	}
	if count > sparseLimit {
		return nil, mask[:words], count
	}
	dense = mask[:words]
	allowed = d.allowed[:0]
	for i, w := range mask[:words] {
		for w != 0 {
			id := i*32 + bits.TrailingZeros32(w)
			if id < len(logits) {
				allowed = append(allowed, int32(id))
			}
			w &= w - 1
		}
	}
	return allowed, dense, count
}

// worker serves steps until Close.
func (d *driver) worker() {
	defer close(d.done)
	for tokens := range d.req {
		d.resp <- d.step(tokens)
		if d.inst != nil && !d.spare {
			// The next instance of this module (a switch, a regenerated
			// reply) is prepared now that this one has answered.
			d.rt.spares.prewarm(d.mod, d.vocab)
			d.spare = true
		}
	}
	d.drop()
}

func (d *driver) step(tokens []int32) outcome {
	d.mu.Lock()
	swapped := d.swapped
	if swapped {
		d.mod, d.arg, d.swapped = d.next, d.nextArg, false
		d.drop()
		if d.nextInst != nil { // started by SwitchTo: no second dw_init
			d.inst, d.told, d.spare, d.nextInst = d.nextInst, 0, false, nil
		}
		d.disabled = false
		d.steps, d.takenBack = 0, 0 // the new controller's budget is whole
	}
	d.mu.Unlock()
	if swapped {
		at := controlrecord.ReplyControl{}
		if d.mod != nil {
			at.Name, at.Arg = d.mod.Name, d.arg
		}
		d.stretch(len(tokens)-d.replyStart, at)
	}
	if d.mod == nil || d.disabled {
		return outcome{}
	}
	if d.steps++; d.steps > d.maxSteps {
		return d.fault(tokens, fmt.Errorf("controller %s: took %d steps in this reply without reaching its limit of %d tokens (at most twice that plus %d steps): it keeps taking tokens back",
			d.mod.Name, d.maxSteps, (d.maxSteps-d.rt.limits.ReplySteps)/2, d.rt.limits.ReplySteps))
	}
	if d.inst != nil && (len(tokens) < d.told || d.told < d.replyStart) && d.reg != nil {
		// A new reply is the next use of the module: pick up a rebuilt file.
		if m := d.reg.refresh(d.mod, d.log); m != d.mod {
			d.mod = m
			d.drop()
		}
	}
	if d.inst != nil && (len(tokens) < d.told || !slices.Equal(tokens[:d.told], d.seen[:d.told])) {
		d.drop() // the conversation was rewound or replaced (regenerate, load)
	}
	if d.inst == nil {
		if note := d.mod.notice.Swap(nil); note != nil && d.logf != nil {
			d.logf(Log{Controller: d.mod.Name, Text: *note})
		}
		inst, err := d.rt.newInstance(d.mod, d.vocab, d.arg, d.kv, d.log)
		if err != nil {
			return d.fault(tokens, err)
		}
		d.inst, d.told, d.spare = inst, 0, false
	}
	if d.told < d.replyStart {
		rc, err := d.inst.callTokens(d.inst.begin, "dw_begin", tokens[d.told:d.replyStart])
		if err == nil && rc != 0 {
			err = fmt.Errorf("controller %s refused to start the reply (dw_begin returned %d)", d.mod.Name, rc)
		}
		if err != nil {
			return d.fault(tokens, err)
		}
		d.seen = append(d.seen[:d.told], tokens[d.told:d.replyStart]...)
		d.told = d.replyStart
	}
	res, err := d.inst.runStep(tokens[d.told:])
	if err != nil {
		return d.fault(tokens, err)
	}
	back := min(res.backtrack, len(tokens)-d.replyStart)
	if d.takenBack += back; d.takenBack > d.rt.limits.TakeBack {
		return d.fault(tokens, fmt.Errorf("controller %s: would take back %d tokens in this reply, more than the %d allowed", d.mod.Name, d.takenBack, d.rt.limits.TakeBack))
	}
	d.seen = append(d.seen[:d.told], tokens[d.told:]...)
	d.told = len(tokens) - back
	if res.flags&abi.FlagFail != 0 {
		// The reply ends where the controller could not go on: a failure
		// of the controller, as a fault is, but the instance is sound.
		d.report(len(tokens)-back, fmt.Errorf("controller %s: the reply cannot go on under its constraint, so it ends unfinished", d.mod.Name), "")
		return outcome{active: true, res: stepResult{flags: abi.FlagStop | res.flags&abi.FlagBacktrack, backtrack: res.backtrack}}
	}
	return outcome{active: true, res: res}
}

// fault disables the controller for the rest of the reply; the instance
// is never called again.
func (d *driver) fault(tokens []int32, err error) outcome {
	d.drop()
	d.report(len(tokens), err, " (controller off until the next reply)")
	return outcome{}
}

// report records err as the fault that ends the controller's part in the
// reply at its n-th token (of the conversation) and tells the user, with
// after appended.
func (d *driver) report(n int, err error, after string) {
	d.disabled = true
	name := ""
	if d.mod != nil {
		name = d.mod.Name
	}
	reason := withoutName(err.Error(), name)
	d.stretch(n-d.replyStart, controlrecord.ReplyControl{Fault: name + ": " + reason})
	if d.logf != nil {
		d.logf(Log{Controller: name, Text: reason + after, Fault: true})
	}
}

// withoutName drops the "controller NAME: " (or "controller NAME ") that
// the instance's errors start with: a Log names its controller already,
// and whoever shows it puts the name first.
func withoutName(msg, name string) string {
	rest, ok := strings.CutPrefix(msg, "controller "+name)
	if !ok || (rest != "" && rest[0] != ':' && rest[0] != ' ') {
		return msg
	}
	return strings.TrimPrefix(strings.TrimPrefix(rest, ":"), " ")
}

// log passes on a guest's log line, without the "NAME: " a controller
// often starts it with (the Log names the controller already).
func (d *driver) log(line string) {
	if d.logf != nil && d.mod != nil {
		d.logf(Log{Controller: d.mod.Name, Text: strings.TrimPrefix(line, d.mod.Name+": ")})
	}
}

func (d *driver) drop() {
	if d.inst != nil {
		d.inst.close()
		d.inst = nil
	}
}
