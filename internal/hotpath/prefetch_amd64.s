#include "textflag.h"

// func Prefetch(addr unsafe.Pointer)
// PREFETCHT0: the line starts on its way into every cache level and the
// instruction retires at once; an address that is not mapped is ignored.
TEXT ·Prefetch(SB), NOSPLIT, $0-8
	MOVQ addr+0(FP), AX
	PREFETCHT0 (AX)
	RET
