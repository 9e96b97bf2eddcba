//go:build race

package cluster

// raceEnabled: the race detector slows this process several times over,
// so tests that bound wall time allow for it.
const raceEnabled = true
