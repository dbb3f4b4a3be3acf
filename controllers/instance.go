package controllers

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"time"
	"unsafe"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
)

// Limits of the host's own (ABI.md says them too).
const (
	maxLogLine  = 1024 // bytes of one log line as shown
	minTokenBuf = 1024 // ids of the first tokens buffer
	maxHeldLogs = 64   // lines of a background dw_load kept for start
)

// instanceState is what the host functions of one instance reach through
// its store.
type instanceState struct {
	kv    *kvStore
	vocab *vocabulary
	rng   *rand.ChaCha8
	clock uint64
	line  []byte // output not yet ended by a newline
	cut   bool   // line lost bytes past maxLogLine
	logf  func(string)
	held  []string // lines logged while logf was nil (a background dw_load)
}

// instance is one running controller.
type instance struct {
	mod    *Module
	store  *wasmtime.Store
	mem    *wasmtime.Memory
	state  *instanceState
	limits guestLimits
	vocabN int
	alloc  *wasmtime.Func
	init   *wasmtime.Func
	begin  *wasmtime.Func
	step   *wasmtime.Func
	tokPtr int32 // guest buffer for tokens
	tokCap int32
	force  []int32 // forced ids copied out of the guest
	known  uint32  // the result flags of the module's ABI version
}

// prepare creates an instance of mod for vocab and runs what does not
// depend on the controller's argument: _initialize, the ABI version check
// and dw_load with the vocabulary, within the init time budget. The
// result is a spare: start makes it a controller. logf receives the
// guest's log lines; when it is nil (a spare prepared in the background)
// the first maxHeldLogs lines are held, and start shows them.
func (rt *wasmRuntime) prepare(mod *Module, vocab *vocabulary, logf func(string)) (*instance, error) {
	deadline := time.Now().Add(rt.limits.InitTime)
	in, wi, err := rt.instantiate(mod, vocab, logf)
	if err != nil {
		return nil, err
	}
	remaining := func() time.Duration { return max(time.Until(deadline), time.Millisecond) }
	vocabPtr, err := in.put(vocab.blob, remaining())
	if err == nil {
		var rc int32
		rc, err = in.call(wi.GetFunc(in.store, "dw_load"), "dw_load", remaining(), vocabPtr, int32(len(vocab.blob)), int32(in.vocabN))
		if err == nil && rc != 0 {
			err = fmt.Errorf("controller %s refused the vocabulary (dw_load returned %d)", mod.Name, rc)
		}
	}
	if err != nil {
		in.close()
		return nil, err
	}
	return in, nil
}

// instantiate creates an instance of mod for vocab and runs _initialize
// and the ABI version check, within the init time budget (the rest of it
// is left for what follows: the budget bounds the store's epoch deadline
// from now on). On an error the instance is closed.
func (rt *wasmRuntime) instantiate(mod *Module, vocab *vocabulary, logf func(string)) (*instance, *wasmtime.Instance, error) {
	st := &instanceState{vocab: vocab, rng: rand.NewChaCha8([32]byte{'d', 'w'}), logf: logf}
	store := wasmtime.NewStoreWithData(rt.engine, st)
	store.Limiter(rt.limits.Memory, -1, -1, -1, -1)
	in := &instance{mod: mod, store: store, state: st, limits: rt.limits, vocabN: len(vocab.Tokens)}
	ok := false
	defer func() {
		if !ok {
			in.close()
		}
	}()
	deadline := time.Now().Add(rt.limits.InitTime)
	store.SetEpochDeadline(ticks(rt.limits.InitTime))
	wi, err := mod.linker.Instantiate(store, mod.module)
	if err != nil {
		return nil, nil, in.fault("instantiate", err)
	}
	in.mem = wi.GetExport(store, "memory").Memory()
	in.alloc, in.init, in.begin, in.step = wi.GetFunc(store, "dw_alloc"), wi.GetFunc(store, "dw_init"), wi.GetFunc(store, "dw_begin"), wi.GetFunc(store, "dw_step")
	if f := wi.GetFunc(store, "_initialize"); f != nil {
		if _, err := f.Call(store); err != nil {
			return nil, nil, in.fault("_initialize", err)
		}
	}
	v, err := in.call(wi.GetFunc(store, "dw_abi_version"), "dw_abi_version", max(time.Until(deadline), time.Millisecond))
	if err != nil {
		return nil, nil, err
	}
	if v < abi.MinVersion || v > abi.Version {
		return nil, nil, fmt.Errorf("controller %s speaks ABI version %d, this Driftwood speaks %d to %d", mod.Name, v, abi.MinVersion, abi.Version)
	}
	in.known = abi.KnownFlags
	if v < 3 {
		in.known = abi.FlagsV2
	}
	ok = true
	return in, wi, nil
}

// start gives a prepared instance the conversation's store, its log and
// its argument (dw_init, within the init time budget). On an error the
// instance is closed.
func (in *instance) start(arg string, kv *kvStore, logf func(string)) error {
	// A background dw_load logged to no one: its lines (an unfinished
	// last one included) are shown now, before dw_init's.
	if len(in.state.line) > 0 {
		in.state.flush()
	}
	in.state.kv, in.state.logf = kv, logf
	for _, l := range in.state.held {
		if logf != nil {
			logf(l)
		}
	}
	in.state.held = nil
	deadline := time.Now().Add(in.limits.InitTime)
	argPtr, err := in.put([]byte(arg), in.limits.InitTime)
	if err == nil {
		var rc int32
		rc, err = in.call(in.init, "dw_init", max(time.Until(deadline), time.Millisecond), argPtr, int32(len(arg)))
		if err == nil && rc != 0 {
			err = fmt.Errorf("controller %s refused its argument %q (dw_init returned %d)", in.mod.Name, arg, rc)
		}
	}
	if err != nil {
		in.close()
	}
	return err
}

func (in *instance) close() {
	if in.store != nil {
		in.store.Close()
		in.store = nil
	}
}

// call runs one export within budget and returns its i32 result.
func (in *instance) call(f *wasmtime.Func, name string, budget time.Duration, args ...any) (int32, error) {
	in.store.SetEpochDeadline(ticks(budget))
	res, err := f.Call(in.store, args...)
	if err != nil {
		return 0, in.fault(name, err)
	}
	v, ok := res.(int32)
	if !ok {
		return 0, fmt.Errorf("controller %s: %s returned %T, want i32", in.mod.Name, name, res)
	}
	return v, nil
}

// fault turns a failed call into the message the user sees.
func (in *instance) fault(name string, err error) error {
	var trap *wasmtime.Trap
	reason := err.Error()
	// wasmtime puts a host function's own message after the backtrace.
	if _, cause, ok := strings.Cut(reason, "Caused by:"); ok {
		reason = strings.TrimSpace(cause)
	}
	reason = firstLine(reason)
	if errors.As(err, &trap) && trap.Code() != nil {
		switch *trap.Code() {
		case wasmtime.Interrupt:
			budget := in.limits.StepTime
			if name != "dw_step" && name != "dw_begin" {
				budget = in.limits.InitTime
			}
			reason = fmt.Sprintf("ran past its %v time budget", budget)
		case wasmtime.UnreachableCodeReached:
			reason = "trapped (unreachable: a panic or abort)"
		case wasmtime.MemoryOutOfBounds:
			reason = "trapped (memory access out of bounds)"
		case wasmtime.StackOverflow:
			reason = "trapped (stack overflow)"
		}
	}
	if len(in.state.line) > 0 { // an unfinished last line is often the panic message
		in.state.flush()
	}
	return fmt.Errorf("controller %s: %s %s", in.mod.Name, name, reason)
}

// memory is the guest's memory as it is now (it moves when it grows).
func (in *instance) memory() []byte { return in.mem.UnsafeData(in.store) }

// put copies b into memory from dw_alloc and returns its address. An
// empty b needs no buffer: dw_alloc is not called and the address is 0.
func (in *instance) put(b []byte, budget time.Duration) (int32, error) {
	if len(b) == 0 {
		return 0, nil
	}
	p, err := in.call(in.alloc, "dw_alloc", budget, int32(len(b)))
	if err != nil {
		return 0, err
	}
	dst := span(in.memory(), p, int32(len(b)))
	if p == 0 || dst == nil {
		return 0, fmt.Errorf("controller %s: dw_alloc(%d) returned %d, outside its memory", in.mod.Name, len(b), p)
	}
	copy(dst, b)
	return p, nil
}

// writeTokens puts ids in the guest's token buffer, growing it when needed.
func (in *instance) writeTokens(ids []int32) (int32, error) {
	if int32(len(ids)) > in.tokCap {
		n := max(int32(len(ids)), 2*in.tokCap, minTokenBuf)
		p, err := in.call(in.alloc, "dw_alloc", in.limits.StepTime, 4*n)
		if err != nil {
			return 0, err
		}
		if p == 0 || span(in.memory(), p, 4*n) == nil {
			return 0, fmt.Errorf("controller %s: dw_alloc(%d) returned %d, outside its memory", in.mod.Name, 4*n, p)
		}
		in.tokPtr, in.tokCap = p, n
	}
	buf := span(in.memory(), in.tokPtr, 4*int32(len(ids)))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(buf[4*i:], uint32(id))
	}
	return in.tokPtr, nil
}

// callTokens calls dw_begin or dw_step with ids.
func (in *instance) callTokens(f *wasmtime.Func, name string, ids []int32) (int32, error) {
	p, err := in.writeTokens(ids)
	if err != nil {
		return 0, err
	}
	return in.call(f, name, in.limits.StepTime, p, int32(len(ids)))
}

// stepResult is a parsed result record. mask views the guest's memory in
// place; it is valid until the next call into the guest.
type stepResult struct {
	flags       uint32
	mask        []uint32
	maskPages   []byte // the whole host pages of memory that hold mask
	backtrack   int
	force       []int32
	temperature float32
}

// runStep calls dw_step and validates its result record.
func (in *instance) runStep(ids []int32) (stepResult, error) {
	var r stepResult
	p, err := in.callTokens(in.step, "dw_step", ids)
	if err != nil || p == 0 {
		return r, err
	}
	mem := in.memory()
	b := span(mem, p, abi.RecordSize)
	if b == nil || p%4 != 0 {
		return r, in.bad("result record at %d is outside memory or misaligned", p)
	}
	rec := abi.ReadRecord(b)
	r.flags = rec.Flags
	if r.flags&^in.known != 0 {
		return r, in.bad("result flags %#x has unknown bits", r.flags)
	}
	if r.flags&abi.FlagMask != 0 {
		mp, words := int32(rec.MaskPtr), int32(abi.MaskWords(in.vocabN))
		m := span(mem, mp, 4*words)
		if m == nil || mp%4 != 0 {
			return r, in.bad("mask at %d (%d words) is outside memory or misaligned", mp, words)
		}
		r.mask = unsafe.Slice((*uint32)(unsafe.Pointer(&m[0])), words)
		r.maskPages = wholePages(mem, m)
	}
	if r.flags&abi.FlagBacktrack != 0 {
		r.backtrack = int(rec.Backtrack)
	}
	if r.flags&abi.FlagForce != 0 {
		fp, n := int32(rec.ForcePtr), int32(rec.ForceLen)
		ids := span(mem, fp, 4*n)
		if ids == nil || n > abi.MaxForce || fp%4 != 0 {
			return r, in.bad("%d forced tokens at %d lie outside memory, are misaligned (or more than %d)", n, fp, abi.MaxForce)
		}
		in.force = in.force[:0]
		for i := int32(0); i < n; i++ {
			id := int32(binary.LittleEndian.Uint32(ids[4*i:]))
			if id < 0 || int(id) >= in.vocabN {
				return r, in.bad("forced token id %d is outside the vocabulary of %d", id, in.vocabN)
			}
			in.force = append(in.force, id)
		}
		r.force = in.force
	}
	if r.flags&abi.FlagTemperature != 0 {
		r.temperature = rec.Temperature
		if !(r.temperature >= 0) || math.IsInf(float64(r.temperature), 0) {
			return r, in.bad("temperature %g is not a finite number ≥ 0", r.temperature)
		}
	}
	return r, nil
}

func (in *instance) bad(format string, args ...any) error {
	return fmt.Errorf("controller %s: malformed step result: %s", in.mod.Name, fmt.Sprintf(format, args...))
}

// wholePages is the smallest run of whole host memory pages of mem that
// holds b (a part of mem), or nil when mem does not lie on page
// boundaries. A linear memory always does: wasmtime maps it (page-aligned)
// and it is a whole number of 64 KiB wasm pages, a multiple of the host
// page size (4 KiB; 16 KiB on Apple Silicon); so the pages are inside
// it, and a device may map them as its buffer (engine.Directive.MaskPages).
func wholePages(mem, b []byte) []byte {
	page := uintptr(os.Getpagesize())
	base := uintptr(unsafe.Pointer(unsafe.SliceData(mem)))
	if len(b) == 0 || base%page != 0 || uintptr(len(mem))%page != 0 {
		return nil
	}
	off := uintptr(unsafe.Pointer(&b[0])) - base
	lo, hi := off&^(page-1), (off+uintptr(len(b))+page-1)&^(page-1)
	return mem[lo:hi:hi]
}
