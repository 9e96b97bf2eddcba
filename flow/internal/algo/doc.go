// Package algo holds the admission algorithms of package flow: token and
// leaky buckets, windows, the sliding log, concurrency caps, circuit
// breakers and Sentinel's limiters, each behind the small Limiter
// interface and built by New from a Spec, which holds only what the
// algorithms read of a rule.
//
// Nothing here knows the engine: time is an argument (clock.Nanotime of
// the engine's clock, read once per call), results are Decision values,
// and one behavioural suite runs every algorithm on a fake clock.
package algo
