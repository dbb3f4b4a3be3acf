package mlxc

import (
	"fmt"
	"unsafe"
)

// Dtype is an MLX element type (mlx_dtype).
type Dtype int32

// The element types Driftwood uses, numbered as in mlx/c/array.h.
const (
	Uint16   Dtype = 2
	Uint32   Dtype = 3
	Int32    Dtype = 7
	Float16  Dtype = 9
	Float32  Dtype = 10
	BFloat16 Dtype = 12
)

// Size is the element size in bytes.
func (d Dtype) Size() int {
	switch d {
	case Uint16, Float16, BFloat16:
		return 2
	case Uint32, Int32, Float32:
		return 4
	}
	panic(fmt.Sprintf("mlxc: dtype %d not supported", int32(d)))
}

// DeviceType is an MLX device kind (mlx_device_type).
type DeviceType int32

// The device kinds.
const (
	CPU DeviceType = 0
	GPU DeviceType = 1
)

func (d DeviceType) String() string {
	if d == GPU {
		return "gpu"
	}
	return "cpu"
}

// Array is an MLX array handle. An array made inside Lib.Do is freed when
// Do returns unless Thread.Keep hands it to the caller, who frees it with
// Thread.Free (in a later Do). There is no finalizer: ownership is
// explicit, and using a freed array panics.
type Array struct {
	h     cArray
	kept  bool
	freed bool
}

func (a *Array) c() cArray {
	if a.freed {
		panic("mlxc: use of a freed Array")
	}
	return a.h
}

// orNull is a's handle, or the null handle for an optional argument.
func orNull(a *Array) cArray {
	if a == nil {
		return cArray{}
	}
	return a.c()
}

// Stream is an MLX stream handle, owned by the caller of
// Thread.DefaultStream and freed with Thread.FreeStream.
type Stream struct {
	h      cStream
	Device DeviceType
	freed  bool
}

// Thread makes MLX calls. It exists only inside Lib.Do, on the MLX
// thread; using it after Do returns panics. Calls are checked: the first
// failure is kept and later calls do nothing, so a sequence of operations
// is checked once, by Do's result or Err.
type Thread struct {
	lib    *Lib
	active bool
	stream *Stream
	temps  []*Array
	err    error
}

func (t *Thread) run(f func(*Thread) error) error {
	t.active, t.err, t.stream = true, nil, nil
	defer t.release()
	if err := f(t); err != nil {
		return err
	}
	return t.err
}

// release frees the temporaries and ends the Thread's validity.
func (t *Thread) release() {
	for _, a := range t.temps {
		if !a.kept {
			t.free(a)
		}
	}
	clear(t.temps)
	t.temps = t.temps[:0]
	t.active, t.stream = false, nil
}

func (t *Thread) live() {
	if !t.active {
		panic("mlxc: Thread used outside Lib.Do")
	}
}

// Err is the first failed call's error in this Do, or nil.
func (t *Thread) Err() error { return t.err }

// check records a failed call (rc != 0) and reports whether it succeeded.
func (t *Thread) check(name string, rc int32) bool {
	if rc != 0 && t.err == nil {
		t.err = &Error{Func: name, Msg: t.lib.takeErr()}
	}
	return rc == 0
}

// op makes a temporary array and, unless an earlier call failed, fills it
// with the C function name through f.
func (t *Thread) op(name string, f func(res *cArray) int32) *Array {
	t.live()
	out := &Array{}
	t.temps = append(t.temps, out)
	if t.err == nil {
		t.check(name, f(&out.h))
	}
	return out
}

// Keep hands a (made in this Do) to the caller, who must Free it.
func (t *Thread) Keep(a *Array) *Array {
	a.kept = true
	return a
}

// Free frees a; freeing it again, or freeing nil, does nothing.
func (t *Thread) Free(a *Array) {
	t.live()
	if a != nil {
		t.free(a)
	}
}

func (t *Thread) free(a *Array) {
	if !a.freed {
		t.lib.api.arrayFree(a.h)
		a.freed = true
	}
}

// DeviceAvailable reports whether MLX was built with, and sees, a device
// of kind d.
func (t *Thread) DeviceAvailable(d DeviceType) bool {
	t.live()
	a := t.lib.api
	if a.deviceIsAvailable == nil { // before mlx-c 0.5.0: Metal was MLX's only GPU
		if d == CPU {
			return true
		}
		var ok bool
		return t.check("mlx_metal_is_available", a.metalIsAvailable(&ok)) && ok
	}
	dev := a.deviceNewType(d, 0)
	defer a.deviceFree(dev)
	var ok bool
	return t.check("mlx_device_is_available", a.deviceIsAvailable(&ok, dev)) && ok
}

// DefaultStream returns (a new handle to) this thread's default stream on
// device kind d.
func (t *Thread) DefaultStream(d DeviceType) *Stream {
	t.live()
	s := &Stream{Device: d}
	name := "mlx_default_cpu_stream_new"
	if d == GPU {
		name = "mlx_default_gpu_stream_new"
		s.h = t.lib.api.defaultGPUStream()
	} else {
		s.h = t.lib.api.defaultCPUStream()
	}
	if s.h.ctx == nil {
		t.check(name, 1)
	}
	return s
}

// FreeStream frees s; freeing it again does nothing.
func (t *Thread) FreeStream(s *Stream) {
	t.live()
	if s != nil && !s.freed {
		t.lib.api.streamFree(s.h)
		s.freed = true
	}
}

// Use makes s the stream of the operations that follow in this Do.
func (t *Thread) Use(s *Stream) {
	t.live()
	if s.freed {
		panic("mlxc: use of a freed Stream")
	}
	t.stream = s
}

func (t *Thread) s() cStream {
	if t.stream == nil {
		panic("mlxc: no stream: call Thread.Use first")
	}
	return t.stream.h
}

// Eval computes the arrays (and everything they depend on).
func (t *Thread) Eval(arrays ...*Array) {
	t.live()
	if t.err != nil {
		return
	}
	a := t.lib.api
	v := a.vectorArrayNew()
	defer a.vectorArrayFree(v)
	for _, x := range arrays {
		if !t.check("mlx_vector_array_append_value", a.vectorArrayAppend(v, x.c())) {
			return
		}
	}
	t.check("mlx_eval", a.eval(v))
}

// Shape is a's shape (nil after a failed call).
func (t *Thread) Shape(a *Array) []int {
	t.live()
	if t.err != nil {
		return nil
	}
	n := int(t.lib.api.arrayNdim(a.c()))
	if n == 0 {
		return []int{}
	}
	dims := unsafe.Slice((*int32)(t.lib.api.arrayShape(a.c())), n)
	out := make([]int, n)
	for i, d := range dims {
		out[i] = int(d)
	}
	return out
}

// Float32s evaluates a float32 array and returns its elements in
// row-major order, viewed in place in the array's memory (on Apple
// Silicon, unified memory): the view is valid until Do returns.
func (t *Thread) Float32s(a *Array) []float32 {
	t.live()
	if t.err != nil {
		return nil
	}
	if dt := t.lib.api.arrayDtype(a.c()); dt != Float32 {
		t.err = fmt.Errorf("mlx: reading an array of dtype %d as float32", int32(dt))
		return nil
	}
	c := t.Contiguous(a)
	t.Eval(c)
	n := 1
	for _, d := range t.Shape(c) {
		n *= d
	}
	if t.err != nil || n == 0 {
		return nil
	}
	p := t.lib.api.arrayDataFloat32(c.c())
	if p == nil {
		t.check("mlx_array_data_float32", 1)
		return nil
	}
	return unsafe.Slice((*float32)(p), n)
}

// Bytes evaluates a float32, float16, bfloat16 or uint32 array and
// returns a copy of its elements' bytes in row-major order (little-endian
// on every platform MLX runs on).
func (t *Thread) Bytes(a *Array) []byte {
	t.live()
	if t.err != nil {
		return nil
	}
	api := t.lib.api
	c := t.Contiguous(a)
	data, name := api.arrayDataFloat32, "mlx_array_data_float32"
	switch dt := api.arrayDtype(a.c()); dt {
	case Float32:
	case Uint32:
		data, name = api.arrayDataUint32, "mlx_array_data_uint32"
	case Float16, BFloat16: // their bits, as uint16
		c = t.op("mlx_view", func(res *cArray) int32 { return api.view(res, c.c(), Uint16, t.s()) })
		data, name = api.arrayDataUint16, "mlx_array_data_uint16"
	default:
		t.err = fmt.Errorf("mlx: reading the bytes of an array of dtype %d", int32(dt))
		return nil
	}
	t.Eval(c)
	n := api.arrayDtype(c.c()).Size()
	for _, d := range t.Shape(c) {
		n *= d
	}
	if t.err != nil {
		return nil
	}
	out := make([]byte, n)
	if n == 0 {
		return out
	}
	p := data(c.c())
	if p == nil {
		t.check(name, 1)
		return nil
	}
	copy(out, unsafe.Slice((*byte)(p), n))
	return out
}

// FromBytes makes an array of shape and dtype from b (little-endian,
// row-major), which MLX copies before returning.
func (t *Thread) FromBytes(b []byte, shape []int, dtype Dtype) *Array {
	t.live()
	n := dtype.Size()
	for _, d := range shape {
		n *= d
	}
	if n != len(b) {
		panic(fmt.Sprintf("mlxc: %d bytes for shape %v of %d-byte elements", len(b), shape, dtype.Size()))
	}
	if n == 0 {
		return t.Zeros(shape, dtype)
	}
	dims := int32s(shape)
	return t.op("mlx_array_new_data", func(res *cArray) int32 {
		*res = t.lib.api.arrayNewData(unsafe.Pointer(&b[0]), &dims[0], int32(len(dims)), dtype)
		if res.ctx == nil {
			return 1
		}
		return 0
	})
}

// int32s converts a shape or index list for C; never empty, so that its
// first element can be passed.
func int32s(v []int) []int32 {
	out := make([]int32, max(len(v), 1))
	for i, x := range v {
		out[i] = int32(x)
	}
	return out
}
