//go:build wasip1

package sdk

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
)

// The instance's state between calls from the host.
var (
	ctrl   Controller // after a successful dw_init
	loaded Controller // after dw_load
	vocab  *Vocab
	result Result                     // the last step's answer, kept alive with its mask and forced tokens
	record [abi.RecordSize / 4]uint32 // the result record, 4-byte aligned
	pinned [][]byte                   // buffers handed out by dw_alloc, never freed
	host   wasmHost
)

// dwABIVersion tells the host which ABI the module speaks.
//
//go:wasmexport dw_abi_version
func dwABIVersion() int32 { return abi.Version }

// dwAlloc returns size bytes for the host to fill. The memory stays
// valid (and allocated) for the instance's lifetime, so a host should
// reuse a buffer rather than allocate one per call.
//
//go:wasmexport dw_alloc
func dwAlloc(size int32) unsafe.Pointer {
	if size < 0 {
		return nil
	}
	buf := make([]byte, max(size, 1))
	pinned = append(pinned, buf)
	return unsafe.Pointer(&buf[0])
}

// dwLoad reads the vocabulary and creates the controller, calling its
// Load: the work that does not depend on the argument (the token trie is
// fetched there by the controllers that use it), done before the host
// needs the controller (it keeps instances so prepared for quick
// switches).
//
//go:wasmexport dw_load
func dwLoad(vocabPtr unsafe.Pointer, vocabLen, nVocab int32) int32 {
	defer logPanic()
	if newController == nil {
		host.Log("sdk: no controller registered: call sdk.Register from an init function")
		return 1
	}
	v, err := ParseVocab(bytesAt(vocabPtr, vocabLen), int(nVocab))
	if err != nil {
		host.Log("sdk: " + err.Error())
		return 1
	}
	v.fetch = hostTrieOf
	c := newController()
	if l, ok := c.(Loader); ok {
		l.Load(v)
	}
	vocab, loaded = v, c
	prefault()
	return 0
}

// dwInit initialises the controller with its argument.
//
//go:wasmexport dw_init
func dwInit(argPtr unsafe.Pointer, argLen int32) int32 {
	defer logPanic()
	if loaded == nil {
		host.Log("sdk: dw_init before a successful dw_load")
		return 1
	}
	if err := loaded.Init(string(bytesAt(argPtr, argLen)), vocab, host); err != nil {
		host.Log(err.Error())
		return 1
	}
	ctrl = loaded
	return 0
}

// description is what dw_describe answered, kept alive for the host to
// read: the record, then the text it points to.
var (
	description     [abi.DescriptionSize / 4]uint32
	descriptionText []byte
)

// dwDescribe says what argument the controller takes, when it is a
// Describer; 0 when it is not.
//
//go:wasmexport dw_describe
func dwDescribe() uint32 {
	defer logPanic()
	if newController == nil {
		return 0
	}
	d, ok := newController().(Describer)
	if !ok {
		return 0
	}
	arg, required := d.Describe()
	descriptionText = []byte(arg)
	rec := abi.Description{TextPtr: addr(data(descriptionText)), TextLen: uint32(len(descriptionText))}
	if required {
		rec.Flags = abi.ArgRequired
	}
	rec.Append(unsafe.Slice((*byte)(unsafe.Pointer(&description[0])), abi.DescriptionSize)[:0])
	return addr(unsafe.Pointer(&description[0]))
}

// prefaultBytes is the heap dw_load touches for dw_init and the first
// steps to reuse.
const prefaultBytes = 1 << 20

// prefault touches and frees some heap, so that dw_init and the first
// steps, which the host times, allocate memory already mapped in: a
// first touch of a page costs a fault in the host (tens of µs on some
// VMs), and dw_load runs while the host prepares a spare instance in the
// background.
func prefault() {
	scratch := make([]byte, prefaultBytes)
	for i := 0; i < len(scratch); i += 4096 {
		scratch[i] = 1
	}
	runtime.KeepAlive(scratch)
	runtime.GC()
}

// dwBegin starts a reply.
//
//go:wasmexport dw_begin
func dwBegin(tokPtr unsafe.Pointer, n int32) int32 {
	defer logPanic()
	if ctrl == nil {
		host.Log("sdk: dw_begin before a successful dw_init")
		return 1
	}
	if err := ctrl.Begin(tokensAt(tokPtr, n)); err != nil {
		host.Log(err.Error())
		return 1
	}
	return 0
}

// dwStep runs one step and returns the address of the result record, or
// 0 for no constraint.
//
//go:wasmexport dw_step
func dwStep(tokPtr unsafe.Pointer, n int32) uint32 {
	defer logPanic()
	if ctrl == nil {
		panic("sdk: dw_step before a successful dw_init")
	}
	result.Reset()
	ctrl.Step(tokensAt(tokPtr, n), &result)
	if result.Flags() == 0 {
		return 0
	}
	var maskPtr, forcePtr uint32
	if result.Mask != nil && len(result.Mask.Words()) > 0 {
		maskPtr = addr(unsafe.Pointer(&result.Mask.Words()[0]))
	}
	if len(result.Force) > 0 {
		forcePtr = addr(unsafe.Pointer(&result.Force[0]))
	}
	rec := unsafe.Slice((*byte)(unsafe.Pointer(&record[0])), abi.RecordSize)
	result.Record(maskPtr, forcePtr).Append(rec[:0])
	return addr(unsafe.Pointer(&record[0]))
}

// logPanic sends a panic's message to the log import before letting it
// trap.
func logPanic() {
	if e := recover(); e != nil {
		host.Log(fmt.Sprint("panic: ", e))
		panic(e)
	}
}

// addr returns p as a linear-memory offset.
func addr(p unsafe.Pointer) uint32 { return uint32(uintptr(p)) }

func bytesAt(p unsafe.Pointer, n int32) []byte {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(p), n)
}

func tokensAt(p unsafe.Pointer, n int32) []int32 {
	if p == nil || n <= 0 {
		return nil
	}
	return unsafe.Slice((*int32)(p), n)
}

// data returns a pointer to b's first byte, or nil when b is empty.
func data(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}
