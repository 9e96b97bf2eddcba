//go:build !race

package flowhttp

const raceEnabled = false
