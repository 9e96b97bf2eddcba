package hotpath

import _ "unsafe" // for go:linkname

// nanotime is the runtime's monotonic clock (the one time.Now's monotonic
// reading and time.Since use), reached directly: the runtime keeps this
// name linkable on purpose (go.dev/issue/67401).
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// monoOrigin makes readings start near 0 when the process does.
var monoOrigin = nanotime()

// Nanotime reads the monotonic clock in nanoseconds since this package was
// initialised. time.Since on a time with a monotonic reading reads the same
// counter with more steps around it (a check for testing/synctest bubbles,
// the subtraction of the process's start, Duration saturation): about 95
// instructions a read through clock.Real's interface before, about 60
// now (callgrind). clock.Real's Nanotime is this, and the flow engine
// calls it directly when its clock is clock.Real.
// Inside a testing/synctest bubble it reads real time, not the bubble's.
func Nanotime() int64 { return nanotime() - monoOrigin }
