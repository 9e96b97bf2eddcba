package alerting

import (
	"fmt"
	"slices"
	"time"
)

// Status values of an Alert.
const (
	StatusFiring   = "firing"
	StatusResolved = "resolved"
)

// Alert is one notification about one resource, or about all traffic when
// Resource is "" (label resource is then absent).
type Alert struct {
	Name     string // the alertname, DefaultName unless WithName
	Resource string // "" for the alert on all traffic
	Status   string // StatusFiring or StatusResolved
	// Ratio is blocked/(passed+waited+blocked) over the window at UpdatedAt.
	Ratio float64
	// StartsAt is when the ratio first went above the threshold (the start
	// of pending, as Prometheus's activeAt); EndsAt is when it resolved,
	// zero while firing.
	StartsAt, EndsAt time.Time
	// Labels hold alertname, severity, resource (unless overall) and the
	// WithLabels labels; Annotations hold summary and description. Each
	// notification has its own maps.
	Labels, Annotations map[string]string

	// UpdatedAt is the evaluation that sent this notification.
	UpdatedAt time.Time
	// Requests and Blocked are the calls (passed + waited + blocked) and the blocked
	// calls in the window at UpdatedAt.
	Requests, Blocked uint64
	// Threshold is the configured rejection ratio (Config.RejectionRatio)
	// that Ratio was compared against.
	Threshold float64
}

// Fingerprint identifies the alert by its labels, as Alertmanager does
// (FNV-1a over the sorted label pairs, 16 hex digits).
func (a Alert) Fingerprint() string { return fmt.Sprintf("%016x", fingerprint(a.Labels)) }

// fingerprint is Prometheus's label set signature: FNV-1a 64 over each
// name and value in name order, each followed by the byte 255 (a byte that
// cannot occur in UTF-8, so pairs never run together).
func fingerprint(labels map[string]string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
		sep    = 255
	)
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	slices.Sort(names)
	h := uint64(offset)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			h ^= uint64(s[i])
			h *= prime
		}
		h ^= sep
		h *= prime
	}
	for _, k := range names {
		add(k)
		add(labels[k])
	}
	return h
}

// State is where one resource's alert is: inactive → pending → firing →
// resolved (→ pending again).
type State uint8

// States of an alert.
const (
	Inactive State = iota // the ratio is low, or too few calls
	Pending               // the ratio is high, for less than For
	Firing                // the ratio stayed high for For; notified
	Resolved              // fired, then fell below ResolveRatio; notified once
)

// String returns the state's lower-case name ("pending", "firing", ...).
func (s State) String() string {
	switch s {
	case Inactive:
		return "inactive"
	case Pending:
		return "pending"
	case Firing:
		return "firing"
	case Resolved:
		return "resolved"
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// ResourceState is the alerter's view of one resource (or of all traffic,
// Resource "") at the last evaluation.
type ResourceState struct {
	Resource string // "" for all traffic
	State    State  // where the alert is now
	// Ratio, Requests and Blocked are over the window at the last evaluation.
	Ratio float64
	// Requests counts passed + waited + blocked calls, Blocked the blocked ones.
	Requests, Blocked uint64
	// Since is when State began (for Pending and Firing, when the ratio went
	// high; for Resolved, when it resolved); zero for Inactive.
	Since time.Time
}
