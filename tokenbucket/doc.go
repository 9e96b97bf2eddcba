// Package tokenbucket owns flowgate's Guava-exact token buckets: SmoothBursty and
// SmoothWarmingUp, the two RateLimiter flavours of Google Guava, restated in Go.
//
// A Limiter remembers the moment the next request may go (nextFree) and the
// permits stored while it was idle. A request never waits for its own cost: it
// waits only for the debt left by earlier requests and pushes nextFree forward by
// its own cost, which the next request pays. Stored permits are free for a
// bursty limiter (up to maxBurstSeconds of work, 1 s by default) and expensive
// for a warming-up one, whose cost per permit climbs from the stable interval at
// thresholdPermits to coldFactor times it at maxPermits (the trapezoid of
// Guava's SmoothRateLimiter). A warming-up limiter starts cold, a bursty one
// empty; WithStoredPermits overrides both.
//
// A bursty limiter's nextFree and stored permits are one instant, the moment
// its bucket is empty, kept in one 64-bit word and updated by
// compare-and-swap: lock-free on every architecture, a grant one CAS, a
// refusal one load (bursty.go). A warming-up limiter keeps Guava's two
// numbers under a mutex (warming.go).
//
// Time is kept in whole microseconds since construction, as Guava's
// nowMicros, and every float to integer conversion saturates, as Java's
// (long) cast does, so waits match Guava's to the microsecond. Two
// deliberate departures from Guava: a zero warm-up period stores nothing
// (Guava computes 0/0 there and its stored permits turn NaN, which makes
// every later wait zero), and a cold factor below 1 is refused. Acquire and
// TryAcquire read the limiter's clock and sleep on it; the flow engine calls
// TryReserveAt, Refund and StoredPermitsAt with a time it read once, and
// never sleeps here.
package tokenbucket
