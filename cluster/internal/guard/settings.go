package guard

import (
	"time"

	"github.com/flowgate/flowgate/clock"
)

// Settings are the per-call timeout and the breaker's settings, the part
// of each client's options they share. Each client's With… options are
// one call to a setter here, so the rules for what a value means (0 keeps
// the default) live in one place.
type Settings struct {
	Timeout  time.Duration
	Failures int
	OpenFor  time.Duration
	Clock    clock.Clock
}

// Defaults are the settings of a client given no option: a 20ms timeout
// (Sentinel's cluster client default), 5 failures open the breaker for 1s,
// the real clock.
func Defaults() Settings {
	return Settings{Timeout: 20 * time.Millisecond, Failures: 5, OpenFor: time.Second, Clock: clock.Real()}
}

// SetTimeout sets the per-call timeout; d <= 0 keeps the current one.
func (s *Settings) SetTimeout(d time.Duration) {
	if d > 0 {
		s.Timeout = d
	}
}

// SetBreaker sets the breaker's threshold and open period; a value <= 0
// keeps the current one.
func (s *Settings) SetBreaker(failures int, openFor time.Duration) {
	if failures > 0 {
		s.Failures = failures
	}
	if openFor > 0 {
		s.OpenFor = openFor
	}
}

// SetClock sets the clock the breaker measures time on; nil keeps the
// current one.
func (s *Settings) SetClock(c clock.Clock) {
	if c != nil {
		s.Clock = c
	}
}
