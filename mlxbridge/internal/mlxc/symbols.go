package mlxc

import "unsafe"

// The C handle types of mlx-c: each is struct { void* ctx; }, passed and
// returned by value.
type (
	cArray       struct{ ctx unsafe.Pointer }
	cStream      struct{ ctx unsafe.Pointer }
	cDevice      struct{ ctx unsafe.Pointer }
	cString      struct{ ctx unsafe.Pointer }
	cVectorArray struct{ ctx unsafe.Pointer }
)

// optionalInt is mlx_optional_int.
type optionalInt struct {
	value    int32
	hasValue bool
}

// optionalFloat is mlx_optional_float.
type optionalFloat struct {
	value    float32
	hasValue bool
}

// optionalDtype is mlx_optional_dtype.
type optionalDtype struct {
	value    Dtype
	hasValue bool
}

// api is the table of libmlxc functions Driftwood calls, with the
// signatures of mlx-c v0.6.0's public headers (mlx/c/*.h). Ops return 0 on
// success and write their result through the first argument; on failure
// they call the error handler first.
type api struct {
	// version.h, string.h, error.h
	version         func(res *cString) int32
	stringData      func(s cString) unsafe.Pointer
	stringFree      func(s cString) int32
	setErrorHandler func(handler, data, dtor uintptr)

	// device.h, stream.h
	deviceNewType     func(typ DeviceType, index int32) cDevice
	deviceFree        func(d cDevice) int32
	deviceIsAvailable func(avail *bool, d cDevice) int32
	defaultCPUStream  func() cStream
	defaultGPUStream  func() cStream
	streamFree        func(s cStream) int32

	// array.h
	arrayFree        func(a cArray) int32
	arrayNewData     func(data unsafe.Pointer, shape *int32, dim int32, dtype Dtype) cArray
	arrayNdim        func(a cArray) uintptr
	arrayShape       func(a cArray) unsafe.Pointer
	arrayDtype       func(a cArray) Dtype
	arrayDataFloat32 func(a cArray) unsafe.Pointer

	// vector.h, transforms.h
	vectorArrayNew    func() cVectorArray
	vectorArrayAppend func(v cVectorArray, a cArray) int32
	vectorArrayFree   func(v cVectorArray) int32
	eval              func(v cVectorArray) int32

	// ops.h
	zeros           func(res *cArray, shape *int32, n uintptr, dtype Dtype, s cStream) int32
	astype          func(res *cArray, a cArray, dtype Dtype, s cStream) int32
	add             func(res *cArray, a, b cArray, s cStream) int32
	multiply        func(res *cArray, a, b cArray, s cStream) int32
	sigmoid         func(res *cArray, a cArray, s cStream) int32
	matmul          func(res *cArray, a, b cArray, s cStream) int32
	reshape         func(res *cArray, a cArray, shape *int32, n uintptr, s cStream) int32
	transposeAxes   func(res *cArray, a cArray, axes *int32, n uintptr, s cStream) int32
	slice           func(res *cArray, a cArray, start *int32, nStart uintptr, stop *int32, nStop uintptr, strides *int32, nStrides uintptr, s cStream) int32
	sliceUpdate     func(res *cArray, src, update cArray, start *int32, nStart uintptr, stop *int32, nStop uintptr, strides *int32, nStrides uintptr, s cStream) int32
	takeAxis        func(res *cArray, a, indices cArray, axis int32, s cStream) int32
	contiguous      func(res *cArray, a cArray, allowColMajor bool, s cStream) int32
	quantizedMatmul func(res *cArray, x, w, scales, biases cArray, transpose bool, groupSize, bits optionalInt, mode string, s cStream) int32
	dequantize      func(res *cArray, w, scales, biases cArray, groupSize, bits optionalInt, mode string, globalScale cArray, dtype optionalDtype, s cStream) int32

	// fast.h
	rmsNorm func(res *cArray, x, weight cArray, eps float32, s cStream) int32
	rope    func(res *cArray, x cArray, dims int32, traditional bool, base optionalFloat, scale float32, offset int32, freqs cArray, s cStream) int32
	sdpa    func(res *cArray, q, k, v cArray, scale float32, maskMode string, mask, sinks cArray, s cStream) int32
}

// symbol binds one C function to a field of api.
type symbol struct {
	name string
	fn   any // pointer to an api field
}

// symbols is the binding table: every field of api with its C name. A
// test checks that it covers every field exactly once.
func (a *api) symbols() []symbol {
	return []symbol{
		{"mlx_version", &a.version},
		{"mlx_string_data", &a.stringData},
		{"mlx_string_free", &a.stringFree},
		{"mlx_set_error_handler", &a.setErrorHandler},
		{"mlx_device_new_type", &a.deviceNewType},
		{"mlx_device_free", &a.deviceFree},
		{"mlx_device_is_available", &a.deviceIsAvailable},
		{"mlx_default_cpu_stream_new", &a.defaultCPUStream},
		{"mlx_default_gpu_stream_new", &a.defaultGPUStream},
		{"mlx_stream_free", &a.streamFree},
		{"mlx_array_free", &a.arrayFree},
		{"mlx_array_new_data", &a.arrayNewData},
		{"mlx_array_ndim", &a.arrayNdim},
		{"mlx_array_shape", &a.arrayShape},
		{"mlx_array_dtype", &a.arrayDtype},
		{"mlx_array_data_float32", &a.arrayDataFloat32},
		{"mlx_vector_array_new", &a.vectorArrayNew},
		{"mlx_vector_array_append_value", &a.vectorArrayAppend},
		{"mlx_vector_array_free", &a.vectorArrayFree},
		{"mlx_eval", &a.eval},
		{"mlx_zeros", &a.zeros},
		{"mlx_astype", &a.astype},
		{"mlx_add", &a.add},
		{"mlx_multiply", &a.multiply},
		{"mlx_sigmoid", &a.sigmoid},
		{"mlx_matmul", &a.matmul},
		{"mlx_reshape", &a.reshape},
		{"mlx_transpose_axes", &a.transposeAxes},
		{"mlx_slice", &a.slice},
		{"mlx_slice_update", &a.sliceUpdate},
		{"mlx_take_axis", &a.takeAxis},
		{"mlx_contiguous", &a.contiguous},
		{"mlx_quantized_matmul", &a.quantizedMatmul},
		{"mlx_dequantize", &a.dequantize},
		{"mlx_fast_rms_norm", &a.rmsNorm},
		{"mlx_fast_rope", &a.rope},
		{"mlx_fast_scaled_dot_product_attention", &a.sdpa},
	}
}

// apiMarker is a function that mlx-c added in v0.6.0, the release whose
// signatures api follows (mlx_dequantize gained global_scale then): its
// presence is how an older mlx-c is told apart, since mlx-c reports only
// MLX's version.
const apiMarker = "mlx_hanning"

// MinCAPI is the oldest mlx-c release whose API this package binds.
const MinCAPI = "0.6.0"
