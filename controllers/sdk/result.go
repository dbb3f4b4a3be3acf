package sdk

import "github.com/driftwoodlabs/driftwood/controllers/abi"

// Result is a controller's answer for one step. The host applies it in
// this order: take back Backtrack tokens; end the reply as the
// controller's failure if Fail; append Force; end the reply if Stop,
// otherwise sample among the tokens Mask allows (all when nil) at
// Temperature (when SetTemperature).
type Result struct {
	// Mask, when not nil, holds the tokens that may be sampled. An empty
	// mask ends the reply.
	Mask *Mask
	// Stop ends the reply after the forced tokens.
	Stop bool
	// Fail ends the reply, after Backtrack, as the controller's failure:
	// no token can continue it under the constraint, and a reply that
	// stopped here would break it. The user is told (`run` exits 3);
	// Force, Mask and Stop are not read.
	Fail bool
	// Backtrack takes back this many reply tokens; the controller must
	// already have forgotten them.
	Backtrack int
	// Force appends these tokens without sampling; they come back in the
	// next step's appended tokens.
	Force []int32
	// Temperature is this step's sampling temperature (0: greedy) when
	// SetTemperature is true.
	Temperature    float32
	SetTemperature bool
}

// Reset empties r: no constraint.
func (r *Result) Reset() { *r = Result{} }

// Flags returns the record's flags word for r.
func (r *Result) Flags() uint32 {
	var f uint32
	if r.Mask != nil {
		f |= abi.FlagMask
	}
	if r.Stop {
		f |= abi.FlagStop
	}
	if r.SetTemperature {
		f |= abi.FlagTemperature
	}
	if len(r.Force) > 0 {
		f |= abi.FlagForce
	}
	if r.Backtrack > 0 {
		f |= abi.FlagBacktrack
	}
	if r.Fail {
		f |= abi.FlagFail
	}
	return f
}

// Record returns r's result record, given where the mask words and the
// forced tokens lie in guest memory (each pointer is written only with
// its flag).
func (r *Result) Record(maskPtr, forcePtr uint32) abi.Record {
	rec := abi.Record{Flags: r.Flags(), Backtrack: uint32(max(r.Backtrack, 0)), ForceLen: uint32(len(r.Force)), Temperature: r.Temperature}
	if rec.Flags&abi.FlagMask != 0 {
		rec.MaskPtr = maskPtr
	}
	if rec.Flags&abi.FlagForce != 0 {
		rec.ForcePtr = forcePtr
	}
	return rec
}
