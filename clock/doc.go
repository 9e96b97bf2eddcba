// Package clock owns time for flowgate: every other package reads the time and
// sleeps through a Clock, so that tests can run on virtual time (Fake) and never
// sleep to wait for logic.
//
// Real() is the wall clock. NewFake returns a virtual clock whose Sleep advances
// the fake time at once, so a test that makes a limiter wait five seconds takes
// microseconds and sees exactly five seconds pass.
//
// Hot paths that only need elapsed time call Nanotime, which reads a monotonic
// counter without building a time.Time: about half the cost of time.Now on Linux.
package clock
