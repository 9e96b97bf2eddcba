// Package accuracy measures how closely a distributed limiter holds its
// limit: it offers a paced load to N instances (spread evenly, skewed to
// one, or with a moving hot instance), records when each call was
// admitted, and reports the worst and best window (1 s windows sliding in
// 10 ms steps, or on a windowed algorithm's own epoch-aligned grid: see
// Windows), the refusals made while the cluster was under its limit, and
// the decisions made per second. The cluster test of make test and the
// bench module's full table (make bench-accuracy) share it.
package accuracy
