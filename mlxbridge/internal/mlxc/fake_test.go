package mlxc

import (
	"reflect"
	"sync"
	"unsafe"
)

// fakeCall is one call into the fake function table.
type fakeCall struct {
	name string
	tid  int // OS thread (osThread), or -1 where unknown
	gid  string
}

// fake is a function table with no library behind it: every function
// records where it ran, writes a non-null handle into its result and
// succeeds, unless its name is in fail.
type fake struct {
	mu    sync.Mutex
	calls []fakeCall
	fail  map[string]string // C function → the message it reports
	lib   *Lib
}

// newFakeLib makes a Lib over a fake table, initialised as Open does.
func newFakeLib() (*Lib, *fake) {
	f := &fake{fail: map[string]string{}}
	a := new(api)
	for _, s := range a.symbols() {
		f.bind(s.name, s.fns[0])
	}
	f.lib = newLib("fake", a)
	var err error
	f.lib.d.do(func() { err = f.lib.init(1) })
	if err != nil {
		panic(err)
	}
	return f.lib, f
}

// handleMemory is what every fake handle points at.
var handleMemory = unsafe.Pointer(new([64]byte))

func (f *fake) bind(name string, field any) {
	fn := reflect.ValueOf(field).Elem()
	ty := fn.Type()
	fn.Set(reflect.MakeFunc(ty, func(args []reflect.Value) []reflect.Value {
		f.mu.Lock()
		f.calls = append(f.calls, fakeCall{name, osThread(), goroutineID()})
		msg, failing := f.fail[name]
		f.mu.Unlock()
		return f.results(name, ty, args, msg, failing)
	}))
}

func (f *fake) results(name string, ty reflect.Type, args []reflect.Value, msg string, failing bool) []reflect.Value {
	switch name {
	case "mlx_version":
		args[0].Interface().(*cString).ctx = unsafe.Pointer(unsafe.StringData("0.31.2\x00"))
	case "mlx_string_data":
		return []reflect.Value{reflect.ValueOf(args[0].Interface().(cString).ctx)}
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
	}
	return []reflect.Value{out}
}

// callsNamed returns the recorded calls of one C function.
func (f *fake) callsNamed(name string) []fakeCall {
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

func (f *fake) reset() {
	f.mu.Lock()
	f.calls = nil
	f.mu.Unlock()
}
