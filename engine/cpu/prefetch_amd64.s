#include "textflag.h"

// func prefetch(p unsafe.Pointer, n int)
//
// Asks for the n bytes at p to be brought into the cache, a line at a time.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX

line:
	CMPQ       CX, $0
	JLE        done
	PREFETCHT0 (SI)
	ADDQ       $64, SI
	SUBQ       $64, CX
	JMP        line

done:
	RET
