// Package simulate owns a deterministic model of a CPU-bound service on
// virtual time, for exercising the adaptive controller in tests and demos:
// no clock, no goroutines, the same seed gives the same trace.
//
// The service serves Capacity requests per second at 100% CPU. Its CPU moves
// toward Idle + (1-Idle) × admitted/Capacity with a first-order lag, after a
// dead time of one or two samples (chosen at random every sample), and every
// reading carries uniform noise of ±Noise. The rule in front of it admits
// min(offered, Capacity × Headroom × factor); refused calls may cost CPU too
// (RejectCost).
package simulate
