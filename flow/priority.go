package flow

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Priority is how important a call is when a concurrency limit, the system
// guard or the CPU controller must shed some of the traffic: the lower
// classes are refused first. The zero value is PriorityNormal, so calls that
// never say are treated as before.
type Priority int8

// The priority classes, lowest first.
const (
	PriorityLow      Priority = -1 // sheddable: uses only part of a limit
	PriorityNormal   Priority = 0  // the default
	PriorityHigh     Priority = 1
	PriorityCritical Priority = 2 // may use the whole limit
	numPriorities             = 4
)

var priorityNames = [numPriorities]string{"low", "normal", "high", "critical"}

// String returns the priority's name as the HTTP header and gRPC metadata
// carry it: "critical", "high", "normal" or "low".
func (p Priority) String() string {
	if i := int(p) + 1; i >= 0 && i < numPriorities {
		return priorityNames[i]
	}
	return fmt.Sprintf("Priority(%d)", int8(p))
}

// ParsePriority reads a priority name ("critical", "high", "normal", "low"),
// in any case.
func ParsePriority(s string) (Priority, bool) {
	for i, n := range priorityNames {
		if strings.EqualFold(n, s) {
			return Priority(i - 1), true
		}
	}
	return PriorityNormal, false
}

// WithPriority sets the call's priority class (default PriorityNormal).
// Values outside the four classes count as the nearest one.
func WithPriority(p Priority) EntryOption {
	return EntryOption{kind: optPriority, n: int(min(max(p, PriorityLow), PriorityCritical))}
}

// Reserve holds back parts of a concurrency or adaptive_concurrency limit
// for the higher classes: Critical is the fraction of the limit only
// critical calls may use, High the further fraction only high and critical
// calls may use, Normal the further fraction low calls may not use. So a
// class may fill the limit up to 1 minus the reserves of the classes above
// it, and a critical call can always use the whole limit.
//
// The default (DefaultReserve) keeps untagged (normal) traffic at the full
// limit, as before priorities existed, and lets low calls fill half of it.
type Reserve struct {
	Critical, High, Normal float64
}

// DefaultReserve is the Reserve of a concurrency or adaptive_concurrency
// rule that sets none: low calls use at most half the limit, every other
// class all of it.
var DefaultReserve = Reserve{Normal: 0.5}

// shares returns the fraction of the limit each class may fill, indexed by
// priority+1 (low first).
func (r Reserve) shares() [numPriorities]float64 {
	c := 1 - r.Critical
	h := c - r.High
	return [numPriorities]float64{h - r.Normal, h, c, 1}
}

func (r Reserve) validate(bad func(field, format string, args ...any)) {
	sum := 0.0
	for _, f := range []struct {
		name string
		v    float64
	}{{"reserve.critical", r.Critical}, {"reserve.high", r.High}, {"reserve.normal", r.Normal}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v >= 1 {
			bad(f.name, "must be in [0, 1), not %v", f.v)
			continue
		}
		sum += f.v
	}
	if sum >= 1 {
		bad("reserve", "critical+high+normal must be < 1 (low calls need a share), not %v", sum)
	}
}

// sysShares are the shares of the system guard's limit each class may fill
// (DefaultReserve's: low calls half of it).
var sysShares = DefaultReserve.shares()

// keepLowForCPU draws whether a low-priority call goes on while the CPU
// controller holds the adaptive factor f below 1: it does with probability
// f. Low calls then pass at about f² of an adaptive rule's full rate, so the
// cut the controller makes falls on them before the higher classes, and
// traffic that is all low still settles (a cut of everything low while
// f < 1 would swing between all and nothing). Only resources with an
// adaptive rule ask (resourceRules.cpuRule).
func (e *Engine) keepLowForCPU() bool {
	f := e.AdaptiveFactor()
	return f >= 1 || rand.Float64() < f
}
