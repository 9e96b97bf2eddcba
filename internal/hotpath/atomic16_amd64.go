package hotpath

// HasCAS16 reports whether the CPU has CMPXCHG16B (all x86-64 CPUs of the
// last fifteen years; GOAMD64=v1 does not promise it). Without it, CAS128
// and Load128 must not be called: use a lock.
var HasCAS16 = hasCX16()

func hasCX16() bool

// hasPrefetchW reports whether the CPU has PREFETCHW (AMD since K8, Intel
// since Broadwell).
var hasPrefetchW = hasPrefetchWCPU()

func hasPrefetchWCPU() bool

// LoadForWrite loads the two words at addr for a CAS128 that follows,
// asking for their cache line exclusive first (PREFETCHW, where the CPU
// has it): one transfer between cores instead of two (one to read it
// shared, one to upgrade it for the CAS) when another core wrote it last;
// with the line already ours it costs about nothing. Each load is atomic;
// the pair may be torn, which fails the CAS.
//
//go:noescape
func LoadForWrite(addr *[2]uint64) (w0, w1 uint64)

// CAS128 stores new0, new1 at addr (16-byte aligned, see Pair16) if it
// holds old0, old1, as one atomic step. Only when HasCAS16.
//
//go:noescape
func CAS128(addr *[2]uint64, old0, old1, new0, new1 uint64) bool

// Load128 reads the two words at addr (16-byte aligned) as one atomic step.
// Only when HasCAS16.
//
//go:noescape
func Load128(addr *[2]uint64) (w0, w1 uint64)
