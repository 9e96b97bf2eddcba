#include "textflag.h"

// func CAS128(addr *[2]uint64, old0, old1, new0, new1 uint64) bool
TEXT ·CAS128(SB), NOSPLIT, $0-41
	MOVQ addr+0(FP), DI
	MOVQ old0+8(FP), AX
	MOVQ old1+16(FP), DX
	MOVQ new0+24(FP), BX
	MOVQ new1+32(FP), CX
	LOCK
	CMPXCHG16B (DI)
	SETEQ ret+40(FP)
	RET

// func Load128(addr *[2]uint64) (w0, w1 uint64)
// A CMPXCHG16B that expects 0:0 and writes 0:0 back: it either finds 0:0
// and leaves it, or fails and loads the current 16 bytes atomically.
TEXT ·Load128(SB), NOSPLIT, $0-24
	MOVQ addr+0(FP), DI
	XORQ AX, AX
	XORQ DX, DX
	XORQ BX, BX
	XORQ CX, CX
	LOCK
	CMPXCHG16B (DI)
	MOVQ AX, w0+8(FP)
	MOVQ DX, w1+16(FP)
	RET

// func hasCX16() bool: CPUID leaf 1, ECX bit 13 (CMPXCHG16B), which the
// x86-64 baseline (GOAMD64=v1) does not promise.
TEXT ·hasCX16(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $13, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

// func LoadForWrite(addr *[2]uint64) (w0, w1 uint64)
// PREFETCHW (0F 0D /1, not in the Go assembler) asks for the line in the
// exclusive state before the loads, so a CAS that follows finds it owned.
// The CPU check is here, not in a Go wrapper, so a caller pays one call.
TEXT ·LoadForWrite(SB), NOSPLIT, $0-24
	MOVQ addr+0(FP), DI
	CMPB ·hasPrefetchW(SB), $0
	JEQ  plain
	BYTE $0x0F; BYTE $0x0D; BYTE $0x0F // PREFETCHW (DI)
plain:
	MOVQ 0(DI), AX
	MOVQ 8(DI), DX
	MOVQ AX, w0+8(FP)
	MOVQ DX, w1+16(FP)
	RET

// func hasPrefetchWCPU() bool: CPUID leaf 0x80000001, ECX bit 8 (PRFCHW, AMD's
// 3DNowPrefetch), where the leaf exists.
TEXT ·hasPrefetchWCPU(SB), NOSPLIT, $0-1
	MOVL $0x80000000, AX
	CPUID
	CMPL AX, $0x80000001
	JB   none
	MOVL $0x80000001, AX
	XORL CX, CX
	CPUID
	SHRL $8, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET
none:
	MOVB $0, ret+0(FP)
	RET
