package controllers

import (
	"encoding/binary"
	"fmt"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
)

// WASI errno values the sandbox answers with.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoInval   = 28
	errnoNosys   = 52
)

// guestMemory returns the calling instance's memory, or nil.
func guestMemory(c *wasmtime.Caller) []byte {
	ext := c.GetExport("memory")
	if ext == nil || ext.Memory() == nil {
		return nil
	}
	return ext.Memory().UnsafeData(c)
}

// span returns mem[ptr:ptr+n], or nil when it lies outside memory.
func span(mem []byte, ptr, n int32) []byte {
	if ptr < 0 || n < 0 || int64(ptr)+int64(n) > int64(len(mem)) {
		return nil
	}
	return mem[ptr : ptr+n : ptr+n]
}

func state(c *wasmtime.Caller) *instanceState { return c.Data().(*instanceState) }

// newLinker defines the host side of the ABI for one module: the driftwood
// imports, and a sandbox for each WASI function the module imports.
func (rt *wasmRuntime) newLinker(mod *wasmtime.Module) (*wasmtime.Linker, error) {
	l := wasmtime.NewLinker(rt.engine)
	defs := map[string]any{
		"log":       hostLog,
		"kv_get":    hostKVGet,
		"kv_set":    hostKVSet,
		"kv_append": hostKVAppend,
		"tokenize":  hostTokenize,
		"trie":      hostTrie,
	}
	defined := map[string]bool{} // a module may import one function twice (Go does)
	for _, imp := range mod.Imports() {
		name := ""
		if imp.Name() != nil {
			name = *imp.Name()
		}
		if defined[imp.Module()+"."+name] {
			continue
		}
		defined[imp.Module()+"."+name] = true
		switch imp.Module() {
		case "driftwood":
			f, ok := defs[name]
			if !ok {
				return nil, fmt.Errorf("imports driftwood.%s, which ABI v%d does not have", name, abi.Version)
			}
			if err := l.FuncWrap("driftwood", name, f); err != nil {
				return nil, err
			}
		case "wasi_snapshot_preview1":
			ft := imp.Type().FuncType()
			if ft == nil {
				return nil, fmt.Errorf("imports wasi_snapshot_preview1.%s, which is not a function", name)
			}
			if err := l.FuncNew(imp.Module(), name, ft, wasiStub(name, len(ft.Results()) == 1)); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("imports %s.%s: a controller may import only driftwood and wasi_snapshot_preview1", imp.Module(), name)
		}
	}
	return l, nil
}

// hostLog passes on a log call's text, at most its first 4 × maxLogLine
// bytes (a line is never shown longer than maxLogLine).
func hostLog(c *wasmtime.Caller, ptr, n int32) {
	if b := span(guestMemory(c), ptr, n); b != nil {
		const most = 4 * maxLogLine
		state(c).logMessage(b[:min(len(b), most)], len(b) > most)
	}
}

func hostKVGet(c *wasmtime.Caller, kptr, klen, bptr, bcap int32) int32 {
	mem := guestMemory(c)
	key, buf := span(mem, kptr, klen), span(mem, bptr, bcap)
	if key == nil || buf == nil {
		return abi.ErrOutside
	}
	kv := state(c).kv
	if kv == nil { // dw_load: no conversation yet, so no key
		return abi.ErrRefused
	}
	v, ok := kv.Get(string(key))
	if !ok {
		return abi.ErrRefused
	}
	copy(buf, v)
	return int32(len(v))
}

func hostKVSet(c *wasmtime.Caller, kptr, klen, vptr, vlen int32) int32 {
	return kvWrite(c, kptr, klen, vptr, vlen, false)
}

func hostKVAppend(c *wasmtime.Caller, kptr, klen, vptr, vlen int32) int32 {
	return kvWrite(c, kptr, klen, vptr, vlen, true)
}

func kvWrite(c *wasmtime.Caller, kptr, klen, vptr, vlen int32, appendTo bool) int32 {
	mem := guestMemory(c)
	key, val := span(mem, kptr, klen), span(mem, vptr, vlen)
	if key == nil || val == nil {
		return abi.ErrOutside
	}
	if state(c).kv == nil {
		return abi.ErrRefused
	}
	var err error
	if appendTo {
		err = state(c).kv.Append(string(key), val)
	} else {
		err = state(c).kv.Set(string(key), val)
	}
	if err != nil {
		return abi.ErrRefused
	}
	return 0
}

// hostTrie copies the vocabulary's token trie, in the ABI's trie format,
// into buf when it fits, and returns its size.
func hostTrie(c *wasmtime.Caller, bptr, bcap int32) int32 {
	buf := span(guestMemory(c), bptr, bcap)
	if buf == nil {
		return abi.ErrOutside
	}
	trie := state(c).vocab.trie()
	if len(trie) <= len(buf) {
		copy(buf, trie)
	}
	return int32(len(trie))
}

func hostTokenize(c *wasmtime.Caller, tptr, tlen, optr, ocap int32) int32 {
	mem := guestMemory(c)
	if ocap < 0 || ocap > int32(len(mem)/4) { // 4*ocap must not wrap
		return abi.ErrOutside
	}
	text, out := span(mem, tptr, tlen), span(mem, optr, 4*ocap)
	if text == nil || out == nil {
		return abi.ErrOutside
	}
	st := state(c)
	if st.vocab.Encode == nil {
		return abi.ErrRefused
	}
	ids := st.vocab.Encode(string(text))
	for i, id := range ids {
		if i == int(ocap) {
			break
		}
		binary.LittleEndian.PutUint32(out[4*i:], uint32(id))
	}
	return int32(len(ids))
}

// wasiStub returns the sandboxed implementation of one WASI function: the
// few a toolchain's runtime needs answer harmlessly, everything else fails
// with ENOSYS.
func wasiStub(name string, returnsErrno bool) func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
	errno := func(e int32) ([]wasmtime.Val, *wasmtime.Trap) {
		if !returnsErrno {
			return nil, nil
		}
		return []wasmtime.Val{wasmtime.ValI32(e)}, nil
	}
	switch name {
	case "fd_write":
		return func(c *wasmtime.Caller, a []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
			return errno(fdWrite(c, a[0].I32(), a[1].I32(), a[2].I32(), a[3].I32()))
		}
	case "random_get":
		return func(c *wasmtime.Caller, a []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
			buf := span(guestMemory(c), a[0].I32(), a[1].I32())
			if buf == nil {
				return errno(errnoInval)
			}
			state(c).rng.Read(buf)
			return errno(errnoSuccess)
		}
	case "clock_time_get":
		return func(c *wasmtime.Caller, a []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
			out := span(guestMemory(c), a[2].I32(), 8)
			if out == nil {
				return errno(errnoInval)
			}
			// A fake clock: deterministic, tells nothing about real time.
			st := state(c)
			st.clock += 1000
			binary.LittleEndian.PutUint64(out, st.clock)
			return errno(errnoSuccess)
		}
	case "args_sizes_get", "environ_sizes_get":
		return func(c *wasmtime.Caller, a []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
			mem := guestMemory(c)
			n, size := span(mem, a[0].I32(), 4), span(mem, a[1].I32(), 4)
			if n == nil || size == nil {
				return errno(errnoInval)
			}
			clear(n)
			clear(size)
			return errno(errnoSuccess)
		}
	case "args_get", "environ_get", "sched_yield":
		return func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
			return errno(errnoSuccess)
		}
	case "proc_exit":
		return func(_ *wasmtime.Caller, a []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
			return nil, wasmtime.NewTrap(fmt.Sprintf("controller called proc_exit(%d)", a[0].I32()))
		}
	case "fd_fdstat_get", "fd_close", "fd_seek", "fd_read", "fd_prestat_get":
		return func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
			return errno(errnoBadf)
		}
	}
	return func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
		return errno(errnoNosys)
	}
}

// fdWrite captures writes to stdout and stderr as log lines.
func fdWrite(c *wasmtime.Caller, fd, iovs, n, nwritten int32) int32 {
	if fd != 1 && fd != 2 {
		return errnoBadf
	}
	mem := guestMemory(c)
	if n < 0 || n > int32(len(mem)/8) { // 8*n must not wrap
		return errnoInval
	}
	vecs := span(mem, iovs, 8*n)
	out := span(mem, nwritten, 4)
	if vecs == nil || out == nil {
		return errnoInval
	}
	st := state(c)
	total := 0
	for i := int32(0); i < n; i++ {
		p := int32(binary.LittleEndian.Uint32(vecs[8*i:]))
		l := int32(binary.LittleEndian.Uint32(vecs[8*i+4:]))
		b := span(mem, p, l)
		if b == nil {
			return errnoInval
		}
		st.write(b)
		total += len(b)
	}
	binary.LittleEndian.PutUint32(out, uint32(total))
	return errnoSuccess
}
