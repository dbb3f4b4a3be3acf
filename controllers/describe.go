package controllers

import (
	"fmt"
	"strings"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
)

// describeSignature is the type of the optional dw_describe export.
const describeSignature = "()->(i32)"

// noVocab is the vocabulary of an instance made only to describe its
// module: dw_describe runs before dw_load.
var noVocab = &vocabulary{}

// Describe says what argument the controller takes, as its optional
// dw_describe export says (ABI.md, Describing the argument): doc is one
// line for the user ("a Go regular expression, which the whole reply
// matches"), and required says that an empty argument is refused. A
// module that does not describe its argument gives "", false, nil.
//
// # Notes
//
// The first call instantiates the module once, apart from any
// conversation (_initialize, then dw_describe; no dw_load), within the
// init time budget; the answer is kept for the module's life.
//
// # Errors
//
// A dw_describe that traps, overruns, or returns a record or text
// outside memory, misaligned, longer than abi.MaxDescription bytes or
// not valid UTF-8: the error says which, and doc and required are zero.
func (m *Module) Describe() (doc string, required bool, err error) {
	m.described.Do(func() {
		if m.describes {
			m.argDoc, m.argNeeded, m.argErr = m.rt.describe(m)
		}
	})
	return m.argDoc, m.argNeeded, m.argErr
}

// Argument describes the argument entry e's controller takes in one line
// for people ("required: a Go regular expression, …", "optional: …",
// "(not described)", or why it could not be asked), and whether an
// empty argument is refused. It compiles the module first when it has
// not been (a second or so): listings call it off their UI goroutine.
func (r *registry) Argument(e Entry) (line string, required bool) {
	mod, err := r.Load(e)
	if err != nil {
		return "(does not load: " + err.Error() + ")", false
	}
	doc, required, err := mod.Describe()
	switch {
	case err != nil:
		return "(" + err.Error() + ")", false
	case doc == "":
		return "(not described)", false
	case required:
		return "required: " + doc, true
	}
	return "optional: " + doc, false
}

// describe runs dw_describe on an instance of its own.
func (rt *wasmRuntime) describe(m *Module) (doc string, required bool, err error) {
	in, wi, err := rt.instantiate(m, noVocab, nil)
	if err != nil {
		return "", false, err
	}
	defer in.close()
	p, err := in.call(wi.GetFunc(in.store, "dw_describe"), "dw_describe", rt.limits.InitTime)
	if err != nil || p == 0 {
		return "", false, err
	}
	mem := in.memory()
	b := span(mem, p, abi.DescriptionSize)
	if b == nil || p%4 != 0 {
		return "", false, fmt.Errorf("controller %s: dw_describe's record at %d is outside memory or misaligned", m.Name, p)
	}
	d := abi.ReadDescription(b)
	text := span(mem, int32(d.TextPtr), int32(d.TextLen))
	switch {
	case d.Flags&^abi.ArgRequired != 0:
		return "", false, fmt.Errorf("controller %s: dw_describe's flags %#x have unknown bits", m.Name, d.Flags)
	case text == nil || d.TextLen > abi.MaxDescription || int32(d.TextPtr) < 0:
		return "", false, fmt.Errorf("controller %s: dw_describe's text (%d bytes at %d) is outside memory or longer than %d bytes", m.Name, d.TextLen, d.TextPtr, abi.MaxDescription)
	case strings.TrimSpace(string(text)) == "":
		return "", false, fmt.Errorf("controller %s: dw_describe's text is empty", m.Name)
	}
	return showable(text, false), d.Flags&abi.ArgRequired != 0, nil
}
