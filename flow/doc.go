// Package flow owns admission: the Engine that decides, per call, whether a
// resource may be entered under the rules in force (global, per user, per
// client IP), with local algorithms, cluster rules through a TokenServer,
// and lock-free statistics.
package flow
