#include "textflag.h"

// Element-wise kernels that need exp, AVX2 + FMA, eight floats at a time
// (the Go wrappers do the tails). exp is Cephes' expf: x = n·ln2 + r with
// |r| ≤ ln2/2, e^r by a degree-7 polynomial, 2^n added to the exponent
// bits; within 2 ulp of the exact value. The argument is clamped to
// [-86, 88.37] so that 2^n stays a normal float.

DATA expc<>+0(SB)/4, $88.37626
DATA expc<>+4(SB)/4, $-86.0
DATA expc<>+8(SB)/4, $1.44269504088896341  // log2(e)
DATA expc<>+12(SB)/4, $0.693359375         // ln2, high part
DATA expc<>+16(SB)/4, $-2.12194440e-4      // ln2, low part
DATA expc<>+20(SB)/4, $1.9875691500e-4
DATA expc<>+24(SB)/4, $1.3981999507e-3
DATA expc<>+28(SB)/4, $8.3334519073e-3
DATA expc<>+32(SB)/4, $4.1665795894e-2
DATA expc<>+36(SB)/4, $1.6666665459e-1
DATA expc<>+40(SB)/4, $5.0000001201e-1
DATA expc<>+44(SB)/4, $1.0
GLOBL expc<>(SB), RODATA|NOPTR, $48

// EXP sets Y0 = exp(Y0), using Y1, Y2, Y3 and Y7; the constants are
// broadcast from memory as they are needed.
#define EXP \
	VBROADCASTSS expc<>+0(SB), Y7 \
	VMINPS       Y7, Y0, Y0 \
	VBROADCASTSS expc<>+4(SB), Y7 \
	VMAXPS       Y7, Y0, Y0 \
	VBROADCASTSS expc<>+8(SB), Y7 \
	VMULPS       Y7, Y0, Y1 \
	VROUNDPS     $0, Y1, Y1 \
	VBROADCASTSS expc<>+12(SB), Y7 \
	VFNMADD231PS Y7, Y1, Y0 \
	VBROADCASTSS expc<>+16(SB), Y7 \
	VFNMADD231PS Y7, Y1, Y0 \
	VMULPS       Y0, Y0, Y2 \
	VBROADCASTSS expc<>+20(SB), Y3 \
	VBROADCASTSS expc<>+24(SB), Y7 \
	VFMADD213PS  Y7, Y0, Y3 \
	VBROADCASTSS expc<>+28(SB), Y7 \
	VFMADD213PS  Y7, Y0, Y3 \
	VBROADCASTSS expc<>+32(SB), Y7 \
	VFMADD213PS  Y7, Y0, Y3 \
	VBROADCASTSS expc<>+36(SB), Y7 \
	VFMADD213PS  Y7, Y0, Y3 \
	VBROADCASTSS expc<>+40(SB), Y7 \
	VFMADD213PS  Y7, Y0, Y3 \
	VFMADD213PS  Y0, Y2, Y3 \
	VBROADCASTSS expc<>+44(SB), Y7 \
	VADDPS       Y7, Y3, Y0 \
	VCVTPS2DQ    Y1, Y1 \
	VPSLLD       $23, Y1, Y1 \
	VPADDD       Y1, Y0, Y0

// func swigluAVX2(gate, up *float32, n int)
//
// gate[i] = gate[i] / (1 + exp(-gate[i])) · up[i], n a multiple of 8.
TEXT ·swigluAVX2(SB), NOSPLIT, $0-24
	MOVQ gate+0(FP), DI
	MOVQ up+8(FP), SI
	MOVQ n+16(FP), CX

swiglu:
	SUBQ         $8, CX
	JLT          swiglu_done
	VXORPS       Y0, Y0, Y0
	VSUBPS       (DI), Y0, Y0
	EXP
	VBROADCASTSS expc<>+44(SB), Y7
	VADDPS       Y7, Y0, Y0
	VMOVUPS      (DI), Y1
	VDIVPS       Y0, Y1, Y1
	VMULPS       (SI), Y1, Y1
	VMOVUPS      Y1, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	JMP          swiglu

swiglu_done:
	VZEROUPPER
	RET

// func expSumAVX2(x *float32, n int, m float32) float32
//
// x[i] = exp(x[i] - m), returning the sum, n a multiple of 8.
TEXT ·expSumAVX2(SB), NOSPLIT, $0-28
	MOVQ         x+0(FP), DI
	MOVQ         n+8(FP), CX
	VBROADCASTSS m+16(FP), Y5
	VXORPS       Y4, Y4, Y4

expsum:
	SUBQ    $8, CX
	JLT     expsum_done
	VMOVUPS (DI), Y0
	VSUBPS  Y5, Y0, Y0
	EXP
	VMOVUPS Y0, (DI)
	VADDPS  Y0, Y4, Y4
	ADDQ    $32, DI
	JMP     expsum

expsum_done:
	VEXTRACTF128 $1, Y4, X1
	VADDPS       X1, X4, X0
	VPERMILPS    $0x0e, X0, X1
	VADDPS       X1, X0, X0
	VPERMILPS    $0x01, X0, X1
	VADDSS       X1, X0, X0
	VZEROUPPER
	MOVSS        X0, ret+24(FP)
	RET
