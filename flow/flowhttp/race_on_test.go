//go:build race

package flowhttp

// raceEnabled: the race detector is on. It changes allocation counts
// (sync.Pool drops a random share of what is put back), so the allocation
// checks run without it (make test runs them so).
const raceEnabled = true
