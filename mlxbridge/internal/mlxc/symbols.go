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
	cDeviceInfo  struct{ ctx unsafe.Pointer }
	cGroup       struct{ ctx unsafe.Pointer }
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

// api is the table of libmlxc functions Driftwood calls. The unmarked
// fields have the signatures of mlx-c 0.6.0 and later; the fields after
// them are the same functions as older releases declare them, bound
// instead when the library is one of those releases and called through
// the 0.6.0 field (see adapt). Which release declares what is in
// releases_gen.go, generated from the headers. Ops return 0 on success and
// write their result through the first argument; on failure they call
// the error handler first.
type api struct {
	// version.h, string.h, error.h
	version         func(res *cString) int32
	stringData      func(s cString) unsafe.Pointer
	stringFree      func(s cString) int32
	setErrorHandler func(handler, data, dtor uintptr)

	// device.h, stream.h, metal.h, cuda.h
	deviceNewType     func(typ DeviceType, index int32) cDevice
	deviceFree        func(d cDevice) int32
	deviceIsAvailable func(avail *bool, d cDevice) int32 // 0.5.0 on; nil before
	metalIsAvailable  func(res *bool) int32
	cudaIsAvailable   func(res *bool) int32 // 0.5.0 on; nil before
	deviceInfoNew     func() cDeviceInfo    // 0.5.0 on, like the next two
	deviceInfoGet     func(info *cDeviceInfo, d cDevice) int32
	deviceInfoString  func(value *unsafe.Pointer, info cDeviceInfo, key string) int32
	deviceInfoFree    func(info cDeviceInfo) int32
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
	arrayDataUint16  func(a cArray) unsafe.Pointer // f16 and bf16 are read as their bits: mlx-c declares their own functions on arm64 only
	arrayDataUint32  func(a cArray) unsafe.Pointer
	arrayDataInt32   func(a cArray) unsafe.Pointer
	arrayNewFloat    func(v float32) cArray
	arrayNewInt      func(v int32) cArray
	// arrayNewDataManaged wraps memory MLX does not own (0.5.0 on; nil
	// before): see Thread.Wrap.
	arrayNewDataManaged func(data unsafe.Pointer, shape *int32, dim int32, dtype Dtype, dtor uintptr) cArray

	// vector.h, transforms.h
	vectorArrayNew    func() cVectorArray
	vectorArrayAppend func(v cVectorArray, a cArray) int32
	vectorArrayFree   func(v cVectorArray) int32
	vectorArrayGet    func(res *cArray, v cVectorArray, i uintptr) int32
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
	view            func(res *cArray, a cArray, dtype Dtype, s cStream) int32
	quantizedMatmul func(res *cArray, x, w, scales, biases cArray, transpose bool, groupSize, bits optionalInt, mode string, s cStream) int32
	dequantize      func(res *cArray, w, scales, biases cArray, groupSize, bits optionalInt, mode string, globalScale cArray, dtype optionalDtype, s cStream) int32
	quantize        func(res *cVectorArray, w cArray, groupSize, bits optionalInt, mode string, globalScale cArray, s cStream) int32
	softmaxAxis     func(res *cArray, a cArray, axis int32, precise bool, s cStream) int32

	// ops.h: what sampling on the device needs (sampleops.go)
	where        func(res *cArray, cond, x, y cArray, s cStream) int32
	subtract     func(res *cArray, a, b cArray, s cStream) int32
	divide       func(res *cArray, a, b cArray, s cStream) int32
	greater      func(res *cArray, a, b cArray, s cStream) int32
	greaterEqual func(res *cArray, a, b cArray, s cStream) int32
	less         func(res *cArray, a, b cArray, s cStream) int32
	notEqual     func(res *cArray, a, b cArray, s cStream) int32
	logicalAnd   func(res *cArray, a, b cArray, s cStream) int32
	rightShift   func(res *cArray, a, b cArray, s cStream) int32
	bitwiseAnd   func(res *cArray, a, b cArray, s cStream) int32
	exp          func(res *cArray, a cArray, s cStream) int32
	negative     func(res *cArray, a cArray, s cStream) int32
	isnan        func(res *cArray, a cArray, s cStream) int32
	maxAll       func(res *cArray, a cArray, keepdims bool, s cStream) int32
	argmaxAll    func(res *cArray, a cArray, keepdims bool, s cStream) int32
	sumAll       func(res *cArray, a cArray, keepdims bool, s cStream) int32
	anyAll       func(res *cArray, a cArray, keepdims bool, s cStream) int32
	argsortAll   func(res *cArray, a cArray, s cStream) int32
	cumsum       func(res *cArray, a cArray, axis int32, reverse, inclusive bool, s cStream) int32
	putAlongAxis func(res *cArray, a, indices, values cArray, axis int32, s cStream) int32

	// fast.h
	rmsNorm func(res *cArray, x, weight cArray, eps float32, s cStream) int32
	rope    func(res *cArray, x cArray, dims int32, traditional bool, base optionalFloat, scale float32, offset int32, freqs cArray, s cStream) int32
	sdpa    func(res *cArray, q, k, v cArray, scale float32, maskMode string, mask, sinks cArray, s cStream) int32

	// distributed_group.h, distributed.h (distributed.go)
	distributedInit func(res *cGroup, strict bool, backend string) int32 // after 0.6.0
	groupRank       func(g cGroup) int32
	groupSize       func(g cGroup) int32
	allSum          func(res *cArray, x cArray, g cGroup, s cStream) int32
	allGather       func(res *cArray, x cArray, g cGroup, s cStream) int32
	clearCache      func() int32 // memory.h

	// The older releases' declarations of the same functions.
	distributedInit06 func(strict bool, backend string) cGroup                                                                                    // 0.6.0
	distributedInit05 func(strict bool) cGroup                                                                                                    // 0.5.0 and before: no backend to choose, so not used
	quantizedMatmul03 func(res *cArray, x, w, scales, biases cArray, transpose bool, groupSize, bits int32, mode string, s cStream) int32         // 0.3.0
	quantizedMatmul02 func(res *cArray, x, w, scales, biases cArray, transpose bool, groupSize, bits int32, s cStream) int32                      // 0.2.0 and before
	dequantize04      func(res *cArray, w, scales, biases cArray, groupSize, bits optionalInt, mode string, dtype optionalDtype, s cStream) int32 // 0.4.0-0.5.0
	dequantize03      func(res *cArray, w, scales, biases cArray, groupSize, bits int32, mode string, s cStream) int32                            // 0.3.0
	dequantize02      func(res *cArray, w, scales, biases cArray, groupSize, bits int32, s cStream) int32                                         // 0.2.0 and before
	quantize04        func(res *cVectorArray, w cArray, groupSize, bits optionalInt, mode string, s cStream) int32                                // 0.4.0-0.5.0
	quantize03        func(res *cVectorArray, w cArray, groupSize, bits int32, mode string, s cStream) int32                                      // 0.3.0
	quantize02        func(res0, res1, res2 *cArray, w cArray, groupSize, bits int32, s cStream) int32                                            // 0.2.0 and before
	sdpa03            func(res *cArray, q, k, v cArray, scale float32, maskMode string, masks cVectorArray, sinks cArray, s cStream) int32        // 0.3.0
	sdpa02            func(res *cArray, q, k, v cArray, scale float32, maskMode string, masks cVectorArray, s cStream) int32                      // 0.2.0
}

// symbol binds one C function to one of the fields in fns, the one whose
// Go type matches the function's declaration in the library's release.
type symbol struct {
	name string
	fns  []any // pointers to api fields
	// optional: a supported release may lack the function (the field
	// stays nil).
	optional bool
}

// symbols is the binding table. A test checks that it covers every field
// exactly once and that, in every supported release, each function's
// declaration matches exactly one of its fields.
func (a *api) symbols() []symbol {
	one := func(name string, fn any) symbol { return symbol{name: name, fns: []any{fn}} }
	opt := func(name string, fn any) symbol { return symbol{name: name, fns: []any{fn}, optional: true} }
	return []symbol{
		one("mlx_version", &a.version),
		one("mlx_string_data", &a.stringData),
		one("mlx_string_free", &a.stringFree),
		one("mlx_set_error_handler", &a.setErrorHandler),
		one("mlx_device_new_type", &a.deviceNewType),
		one("mlx_device_free", &a.deviceFree),
		opt("mlx_device_is_available", &a.deviceIsAvailable),
		one("mlx_metal_is_available", &a.metalIsAvailable),
		opt("mlx_cuda_is_available", &a.cudaIsAvailable),
		opt("mlx_device_info_new", &a.deviceInfoNew),
		opt("mlx_device_info_get", &a.deviceInfoGet),
		opt("mlx_device_info_get_string", &a.deviceInfoString),
		opt("mlx_device_info_free", &a.deviceInfoFree),
		one("mlx_default_cpu_stream_new", &a.defaultCPUStream),
		one("mlx_default_gpu_stream_new", &a.defaultGPUStream),
		one("mlx_stream_free", &a.streamFree),
		one("mlx_array_free", &a.arrayFree),
		one("mlx_array_new_data", &a.arrayNewData),
		one("mlx_array_ndim", &a.arrayNdim),
		one("mlx_array_shape", &a.arrayShape),
		one("mlx_array_dtype", &a.arrayDtype),
		one("mlx_array_data_float32", &a.arrayDataFloat32),
		one("mlx_array_data_uint16", &a.arrayDataUint16),
		one("mlx_array_data_uint32", &a.arrayDataUint32),
		one("mlx_array_data_int32", &a.arrayDataInt32),
		one("mlx_array_new_float", &a.arrayNewFloat),
		one("mlx_array_new_int", &a.arrayNewInt),
		opt("mlx_array_new_data_managed", &a.arrayNewDataManaged),
		one("mlx_vector_array_new", &a.vectorArrayNew),
		one("mlx_vector_array_append_value", &a.vectorArrayAppend),
		one("mlx_vector_array_free", &a.vectorArrayFree),
		one("mlx_vector_array_get", &a.vectorArrayGet),
		one("mlx_eval", &a.eval),
		one("mlx_zeros", &a.zeros),
		one("mlx_astype", &a.astype),
		one("mlx_add", &a.add),
		one("mlx_multiply", &a.multiply),
		one("mlx_sigmoid", &a.sigmoid),
		one("mlx_matmul", &a.matmul),
		one("mlx_reshape", &a.reshape),
		one("mlx_transpose_axes", &a.transposeAxes),
		one("mlx_slice", &a.slice),
		one("mlx_slice_update", &a.sliceUpdate),
		one("mlx_take_axis", &a.takeAxis),
		one("mlx_contiguous", &a.contiguous),
		one("mlx_view", &a.view),
		{name: "mlx_quantized_matmul", fns: []any{&a.quantizedMatmul, &a.quantizedMatmul03, &a.quantizedMatmul02}},
		{name: "mlx_dequantize", fns: []any{&a.dequantize, &a.dequantize04, &a.dequantize03, &a.dequantize02}},
		{name: "mlx_quantize", fns: []any{&a.quantize, &a.quantize04, &a.quantize03, &a.quantize02}},
		one("mlx_softmax_axis", &a.softmaxAxis),
		one("mlx_where", &a.where),
		one("mlx_subtract", &a.subtract),
		one("mlx_divide", &a.divide),
		one("mlx_greater", &a.greater),
		one("mlx_greater_equal", &a.greaterEqual),
		one("mlx_less", &a.less),
		one("mlx_not_equal", &a.notEqual),
		one("mlx_logical_and", &a.logicalAnd),
		one("mlx_right_shift", &a.rightShift),
		one("mlx_bitwise_and", &a.bitwiseAnd),
		one("mlx_exp", &a.exp),
		one("mlx_negative", &a.negative),
		one("mlx_isnan", &a.isnan),
		one("mlx_max", &a.maxAll),
		one("mlx_argmax", &a.argmaxAll),
		one("mlx_sum", &a.sumAll),
		one("mlx_any", &a.anyAll),
		one("mlx_argsort", &a.argsortAll),
		one("mlx_cumsum", &a.cumsum),
		one("mlx_put_along_axis", &a.putAlongAxis),
		one("mlx_fast_rms_norm", &a.rmsNorm),
		one("mlx_fast_rope", &a.rope),
		{name: "mlx_fast_scaled_dot_product_attention", fns: []any{&a.sdpa, &a.sdpa03, &a.sdpa02}},
		{name: "mlx_distributed_init", fns: []any{&a.distributedInit, &a.distributedInit06, &a.distributedInit05}},
		one("mlx_distributed_group_rank", &a.groupRank),
		one("mlx_distributed_group_size", &a.groupSize),
		one("mlx_distributed_all_sum", &a.allSum),
		one("mlx_distributed_all_gather", &a.allGather),
		one("mlx_clear_cache", &a.clearCache),
	}
}

// adapt fills the 0.6.0 fields from an older release's, so that callers
// use one signature. Driftwood passes no mask array, no global scale and
// no dtype (the default is the scales' dtype in every release); the
// oldest quantize's three results come back as one vector, as later
// releases return them.
func (a *api) adapt() {
	switch {
	case a.quantizedMatmul03 != nil:
		a.quantizedMatmul = func(res *cArray, x, w, scales, biases cArray, transpose bool, groupSize, bits optionalInt, mode string, s cStream) int32 {
			return a.quantizedMatmul03(res, x, w, scales, biases, transpose, groupSize.value, bits.value, mode, s)
		}
	case a.quantizedMatmul02 != nil:
		a.quantizedMatmul = func(res *cArray, x, w, scales, biases cArray, transpose bool, groupSize, bits optionalInt, _ string, s cStream) int32 {
			return a.quantizedMatmul02(res, x, w, scales, biases, transpose, groupSize.value, bits.value, s) // affine, the only mode then
		}
	}
	switch {
	case a.dequantize04 != nil:
		a.dequantize = func(res *cArray, w, scales, biases cArray, groupSize, bits optionalInt, mode string, _ cArray, dtype optionalDtype, s cStream) int32 {
			return a.dequantize04(res, w, scales, biases, groupSize, bits, mode, dtype, s)
		}
	case a.dequantize03 != nil:
		a.dequantize = func(res *cArray, w, scales, biases cArray, groupSize, bits optionalInt, mode string, _ cArray, _ optionalDtype, s cStream) int32 {
			return a.dequantize03(res, w, scales, biases, groupSize.value, bits.value, mode, s)
		}
	case a.dequantize02 != nil:
		a.dequantize = func(res *cArray, w, scales, biases cArray, groupSize, bits optionalInt, _ string, _ cArray, _ optionalDtype, s cStream) int32 {
			return a.dequantize02(res, w, scales, biases, groupSize.value, bits.value, s)
		}
	}
	switch {
	case a.quantize04 != nil:
		a.quantize = func(res *cVectorArray, w cArray, groupSize, bits optionalInt, mode string, _ cArray, s cStream) int32 {
			return a.quantize04(res, w, groupSize, bits, mode, s)
		}
	case a.quantize03 != nil:
		a.quantize = func(res *cVectorArray, w cArray, groupSize, bits optionalInt, mode string, _ cArray, s cStream) int32 {
			return a.quantize03(res, w, groupSize.value, bits.value, mode, s)
		}
	case a.quantize02 != nil:
		a.quantize = func(res *cVectorArray, w cArray, groupSize, bits optionalInt, _ string, _ cArray, s cStream) int32 {
			var out [3]cArray // codes, scales, biases, returned as one vector as later releases do
			defer func() {
				for _, x := range out {
					if x.ctx != nil {
						a.arrayFree(x)
					}
				}
			}()
			if rc := a.quantize02(&out[0], &out[1], &out[2], w, groupSize.value, bits.value, s); rc != 0 {
				return rc
			}
			for _, x := range out {
				if rc := a.vectorArrayAppend(*res, x); rc != 0 {
					return rc
				}
			}
			return 0
		}
	}
	switch {
	case a.distributedInit06 != nil:
		a.distributedInit = func(res *cGroup, strict bool, backend string) int32 {
			*res = a.distributedInit06(strict, backend)
			return 0
		}
	}
	if a.sdpa03 != nil || a.sdpa02 != nil {
		a.sdpa = func(res *cArray, q, k, v cArray, scale float32, maskMode string, mask, sinks cArray, s cStream) int32 {
			masks := a.vectorArrayNew()
			defer a.vectorArrayFree(masks)
			if mask.ctx != nil {
				a.vectorArrayAppend(masks, mask)
			}
			if a.sdpa03 != nil {
				return a.sdpa03(res, q, k, v, scale, maskMode, masks, sinks, s)
			}
			return a.sdpa02(res, q, k, v, scale, maskMode, masks, s)
		}
	}
}
