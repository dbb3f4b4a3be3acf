package mlxc

import (
	"fmt"
	"unsafe"
)

// The operations sampling on the device needs (see mlxbridge's sample.go),
// each a checked call on the current stream like those of ops.go.

// binary makes a two-operand operation.
func (t *Thread) binary(name string, f func(res *cArray, a, b cArray, s cStream) int32, a, b *Array) *Array {
	return t.op(name, func(res *cArray) int32 { return f(res, a.c(), b.c(), t.s()) })
}

// unary makes a one-operand operation.
func (t *Thread) unary(name string, f func(res *cArray, a cArray, s cStream) int32, a *Array) *Array {
	return t.op(name, func(res *cArray) int32 { return f(res, a.c(), t.s()) })
}

// reduce makes a reduction over every axis, to a scalar.
func (t *Thread) reduce(name string, f func(res *cArray, a cArray, keepdims bool, s cStream) int32, a *Array) *Array {
	return t.op(name, func(res *cArray) int32 { return f(res, a.c(), false, t.s()) })
}

// Where is x where cond is true, else y, broadcasting.
func (t *Thread) Where(cond, x, y *Array) *Array {
	return t.op("mlx_where", func(res *cArray) int32 { return t.lib.api.where(res, cond.c(), x.c(), y.c(), t.s()) })
}

// Subtract is a − b.
func (t *Thread) Subtract(a, b *Array) *Array {
	return t.binary("mlx_subtract", t.lib.api.subtract, a, b)
}

// Divide is a / b.
func (t *Thread) Divide(a, b *Array) *Array { return t.binary("mlx_divide", t.lib.api.divide, a, b) }

// Greater is a > b.
func (t *Thread) Greater(a, b *Array) *Array { return t.binary("mlx_greater", t.lib.api.greater, a, b) }

// GreaterEqual is a ≥ b.
func (t *Thread) GreaterEqual(a, b *Array) *Array {
	return t.binary("mlx_greater_equal", t.lib.api.greaterEqual, a, b)
}

// Less is a < b.
func (t *Thread) Less(a, b *Array) *Array { return t.binary("mlx_less", t.lib.api.less, a, b) }

// NotEqual is a ≠ b.
func (t *Thread) NotEqual(a, b *Array) *Array {
	return t.binary("mlx_not_equal", t.lib.api.notEqual, a, b)
}

// And is a ∧ b of booleans.
func (t *Thread) And(a, b *Array) *Array {
	return t.binary("mlx_logical_and", t.lib.api.logicalAnd, a, b)
}

// RightShift is a >> b of integers.
func (t *Thread) RightShift(a, b *Array) *Array {
	return t.binary("mlx_right_shift", t.lib.api.rightShift, a, b)
}

// BitwiseAnd is a & b of integers.
func (t *Thread) BitwiseAnd(a, b *Array) *Array {
	return t.binary("mlx_bitwise_and", t.lib.api.bitwiseAnd, a, b)
}

// View is a's bytes as elements of dtype (the last axis rescaled).
func (t *Thread) View(a *Array, dtype Dtype) *Array {
	return t.op("mlx_view", func(res *cArray) int32 { return t.lib.api.view(res, a.c(), dtype, t.s()) })
}

// Exp is eᵃ.
func (t *Thread) Exp(a *Array) *Array { return t.unary("mlx_exp", t.lib.api.exp, a) }

// Negative is −a.
func (t *Thread) Negative(a *Array) *Array { return t.unary("mlx_negative", t.lib.api.negative, a) }

// IsNaN is true where a is NaN.
func (t *Thread) IsNaN(a *Array) *Array { return t.unary("mlx_isnan", t.lib.api.isnan, a) }

// Max is the largest element of a.
func (t *Thread) Max(a *Array) *Array { return t.reduce("mlx_max", t.lib.api.maxAll, a) }

// Argmax is the (uint32) index of a's largest element in row-major
// order, the first of equal ones.
func (t *Thread) Argmax(a *Array) *Array { return t.reduce("mlx_argmax", t.lib.api.argmaxAll, a) }

// Sum is the sum of a's elements.
func (t *Thread) Sum(a *Array) *Array { return t.reduce("mlx_sum", t.lib.api.sumAll, a) }

// Any is whether any element of a is true (or non-zero).
func (t *Thread) Any(a *Array) *Array { return t.reduce("mlx_any", t.lib.api.anyAll, a) }

// Argsort is the (uint32) indices that sort the flattened a ascending.
func (t *Thread) Argsort(a *Array) *Array {
	return t.unary("mlx_argsort", t.lib.api.argsortAll, a)
}

// CumSum is the running sum of a along axis: inclusive counts each
// element in its own sum, exclusive only those before it.
func (t *Thread) CumSum(a *Array, axis int, inclusive bool) *Array {
	return t.op("mlx_cumsum", func(res *cArray) int32 {
		return t.lib.api.cumsum(res, a.c(), int32(axis), false, inclusive, t.s())
	})
}

// PutAlongAxis is a with a[indices] set to values along axis.
func (t *Thread) PutAlongAxis(a, indices, values *Array, axis int) *Array {
	return t.op("mlx_put_along_axis", func(res *cArray) int32 {
		return t.lib.api.putAlongAxis(res, a.c(), indices.c(), values.c(), int32(axis), t.s())
	})
}

// Float is a float32 scalar.
func (t *Thread) Float(v float32) *Array {
	return t.op("mlx_array_new_float", func(res *cArray) int32 { return nonNull(res, t.lib.api.arrayNewFloat(v)) })
}

// Int is an int32 scalar.
func (t *Thread) Int(v int32) *Array {
	return t.op("mlx_array_new_int", func(res *cArray) int32 { return nonNull(res, t.lib.api.arrayNewInt(v)) })
}

func nonNull(res *cArray, a cArray) int32 {
	*res = a
	if a.ctx == nil {
		return 1
	}
	return 0
}

// CanWrap says whether the library can wrap memory it does not own
// (mlx-c 0.5.0 and later).
func (t *Thread) CanWrap() bool { return t.lib.api.arrayNewDataManaged != nil }

// Wrap makes a one-dimensional uint32 array over words without copying
// them where MLX can (Metal maps page-aligned memory whose length is a
// whole number of pages as a buffer; MLX's CPU and CUDA builds copy at
// once). The memory stays the caller's: it must hold the same words
// until the array and every array computed from it are freed, and MLX
// never frees it. Wrap panics when CanWrap is false.
func (t *Thread) Wrap(words []uint32) *Array {
	if len(words) == 0 {
		panic("mlxc: Wrap of no words")
	}
	dims := []int32{int32(len(words))}
	return t.op("mlx_array_new_data_managed", func(res *cArray) int32 {
		return nonNull(res, t.lib.api.arrayNewDataManaged(unsafe.Pointer(&words[0]), &dims[0], 1, Uint32, t.lib.keepMemory))
	})
}

// DataPointer evaluates a and returns the address of its first element:
// where MLX holds it (a view's offset included).
func (t *Thread) DataPointer(a *Array) uintptr {
	t.Eval(a)
	if t.err != nil {
		return 0
	}
	return uintptr(t.lib.api.arrayDataUint32(a.c()))
}

// Int32s evaluates scalars of dtype int32 together (one evaluation, one
// wait) and returns their values.
func (t *Thread) Int32s(out []int32, scalars ...*Array) {
	t.Eval(scalars...)
	for i, a := range scalars {
		if t.err != nil {
			return
		}
		if dt := t.lib.api.arrayDtype(a.c()); dt != Int32 {
			t.err = fmt.Errorf("mlx: reading an array of dtype %d as int32", int32(dt))
			return
		}
		p := t.lib.api.arrayDataInt32(a.c())
		if p == nil {
			t.check("mlx_array_data_int32", 1)
			return
		}
		out[i] = *(*int32)(p)
	}
}
