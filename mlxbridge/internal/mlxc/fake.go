package mlxc

import (
	"reflect"
	"sync"
	"unsafe"
)

// Fake is a function table with no library behind it, for tests of the
// code above this package where there is no libmlxc (CI): every function
// records where it ran, writes a non-null handle into its result and
// succeeds, unless its name is in Fail. Arrays read back hold Numbers
// (shape [len(Numbers)]), or one zero when Numbers is nil.
type Fake struct {
	// Fail maps a C function to the message it reports when it fails.
	Fail map[string]string
	// Numbers is every array's contents when read back.
	Numbers []float32

	mu    sync.Mutex
	calls []fakeCall
	lib   *Lib
	shape int32
}

// fakeCall is one call into the fake function table.
type fakeCall struct {
	name string
	tid  int // OS thread (osThread), or -1 where unknown
	gid  string
}

// NewFake makes a Lib over a fake table, initialised as Open does, and
// recognised as the newest release read (so a test can mark it newer).
// Set the Fake's fields before the first call that needs them.
func NewFake() (*Lib, *Fake) {
	f := &Fake{Fail: map[string]string{}}
	a := new(api)
	for _, s := range a.symbols() {
		f.bind(s.name, s.fns[0])
	}
	f.lib = newLib("fake", a)
	f.lib.Release = Release{Name: releases[len(releases)-1].name, index: len(releases) - 1}
	var err error
	f.lib.d.do(func() { err = f.lib.init(1) })
	if err != nil {
		panic(err)
	}
	return f.lib, f
}

// MarkNewer makes the Lib one that is newer than every release read.
func (l *Lib) MarkNewer(why string) { l.Release.Newer, l.Release.Why = true, why }

// handleMemory is what every fake handle points at.
var handleMemory = unsafe.Pointer(new([64]byte))

func (f *Fake) bind(name string, field any) {
	fn := reflect.ValueOf(field).Elem()
	ty := fn.Type()
	fn.Set(reflect.MakeFunc(ty, func(args []reflect.Value) []reflect.Value {
		f.mu.Lock()
		f.calls = append(f.calls, fakeCall{name, fakeThread(), fakeGoroutine()})
		msg, failing := f.Fail[name]
		f.mu.Unlock()
		return f.results(name, ty, args, msg, failing)
	}))
}

// fakeThread and fakeGoroutine say where a call ran; the tests of this
// package set them.
var (
	fakeThread    = func() int { return -1 }
	fakeGoroutine = func() string { return "" }
)

func (f *Fake) results(name string, ty reflect.Type, args []reflect.Value, msg string, failing bool) []reflect.Value {
	switch name {
	case "mlx_version":
		args[0].Interface().(*cString).ctx = unsafe.Pointer(unsafe.StringData("0.31.2\x00"))
	case "mlx_string_data":
		return []reflect.Value{reflect.ValueOf(args[0].Interface().(cString).ctx)}
	case "mlx_array_ndim":
		if f.Numbers != nil {
			return []reflect.Value{reflect.ValueOf(uintptr(1))}
		}
	case "mlx_array_dtype":
		if f.Numbers != nil {
			return []reflect.Value{reflect.ValueOf(Float32)}
		}
	case "mlx_array_shape":
		f.shape = int32(len(f.Numbers))
		return []reflect.Value{reflect.ValueOf(unsafe.Pointer(&f.shape))}
	case "mlx_array_data_float32":
		if len(f.Numbers) > 0 {
			return []reflect.Value{reflect.ValueOf(unsafe.Pointer(&f.Numbers[0]))}
		}
	}
	if failing {
		b := append([]byte(msg), 0)
		f.lib.onError(&b[0])
	}
	if len(args) > 0 {
		if res, ok := args[0].Interface().(*cArray); ok && !failing {
			res.ctx = handleMemory
		}
	}
	if ty.NumOut() == 0 {
		return nil
	}
	out := reflect.New(ty.Out(0)).Elem()
	switch {
	case ty.Out(0).Kind() == reflect.Int32 && failing:
		out.SetInt(1)
	case ty.Out(0).Kind() == reflect.Struct && !failing:
		*(*unsafe.Pointer)(out.Addr().UnsafePointer()) = handleMemory // a non-null handle
	case ty.Out(0) == reflect.TypeFor[unsafe.Pointer]() && !failing:
		out.Set(reflect.ValueOf(handleMemory))
	}
	return []reflect.Value{out}
}

// callsNamed returns the recorded calls of one C function.
func (f *Fake) callsNamed(name string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if c.name == name {
			out = append(out, c)
		}
	}
	return out
}

// Calls counts the calls made so far to the C function name.
func (f *Fake) Calls(name string) int { return len(f.callsNamed(name)) }

func (f *Fake) reset() {
	f.mu.Lock()
	f.calls = nil
	f.mu.Unlock()
}
