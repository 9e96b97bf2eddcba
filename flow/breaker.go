package flow

import "fmt"

// BreakerStrategy is what a circuit breaker measures over its window.
type BreakerStrategy uint8

// The strategies. The zero value is "none": only breakers have one.
const (
	// BreakerErrorRatio opens when errors / completed calls > Threshold.
	BreakerErrorRatio BreakerStrategy = iota + 1
	// BreakerErrorCount opens when errors >= Threshold.
	BreakerErrorCount
	// BreakerSlowRatio opens when calls slower than SlowCall / completed
	// calls > Threshold.
	BreakerSlowRatio
	numStrategies
)

var strategyNames = [numStrategies]string{"", "error_ratio", "error_count", "slow_ratio"}

// String returns the strategy's JSON name ("" for none).
func (s BreakerStrategy) String() string {
	if s < numStrategies {
		return strategyNames[s]
	}
	return fmt.Sprintf("BreakerStrategy(%d)", uint8(s))
}

// Strategies lists the breaker strategies, in JSON order.
func Strategies() []BreakerStrategy {
	return []BreakerStrategy{BreakerErrorRatio, BreakerErrorCount, BreakerSlowRatio}
}

// ParseStrategy parses a strategy's JSON name, e.g. "error_ratio".
func ParseStrategy(s string) (BreakerStrategy, error) {
	for _, x := range Strategies() {
		if strategyNames[x] == s {
			return x, nil
		}
	}
	return 0, fmt.Errorf("unknown strategy %q (want error_ratio, error_count or slow_ratio)", s)
}

// BreakerState is a circuit breaker's state. Its numbers are those of the
// flowgate_breaker_state metric.
type BreakerState uint8

// The states: closed lets calls through and counts their outcomes; open
// refuses every call for OpenFor; half-open lets Probes calls through and
// closes when all succeed, or opens again when one fails.
const (
	BreakerClosed    BreakerState = 0
	BreakerOpen      BreakerState = 1
	BreakerHalfOpen  BreakerState = 2
	numBreakerStates BreakerState = 3
)

var breakerStateNames = [numBreakerStates]string{"closed", "open", "half_open"}

// String returns "closed", "open" or "half_open".
func (s BreakerState) String() string {
	if s < numBreakerStates {
		return breakerStateNames[s]
	}
	return fmt.Sprintf("BreakerState(%d)", uint8(s))
}

// MaxProbes bounds Rule.Probes (a breaker's state word keeps 10 bits for
// them).
const MaxProbes = 1000
