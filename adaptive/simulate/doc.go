// Package simulate owns deterministic models of services on virtual time,
// for exercising flowgate's adaptive controls in tests and demos: no real
// clock, no goroutines, the same seed gives the same trace.
//
// Model is a CPU-bound service for the CPU controller. It serves Capacity
// requests per second at 100% CPU. Its CPU moves toward Idle + (1-Idle) ×
// admitted/Capacity with a first-order lag, after a dead time of one or two
// samples (chosen at random every sample), and every reading carries uniform
// noise of ±Noise. The rule in front of it admits min(offered, Capacity ×
// Headroom × factor); refused calls may cost CPU too (RejectCost).
//
// Service is a concurrency-bound service for concurrency limits: Capacity
// calls are served at full speed, each needing Latency × U[1-Jitter,
// 1+Jitter] of work, and above Capacity the workers are shared, so latency
// grows with the queue while throughput stays at Capacity/Latency. LoadRun
// (or Service.Simulate with a Setup) offers it open-loop Poisson traffic of
// a priority Mix through a real flow.Engine on a clock.Fake — Entry on
// arrival, Exit on completion — and measures goodput, latency percentiles,
// admissions per priority and the rule's limit over time.
package simulate
