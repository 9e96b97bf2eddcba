// Package adaptive owns the CPU-driven control of flowgate: it measures the
// CPU this process may use, scales the rate of every rule marked adaptive to
// keep that CPU near a target, and optionally guards the whole engine
// against overload (Sentinel's system protection).
//
// # Measuring
//
// Config.CPUSource says what is measured (NewSamplerFor): the process's own
// cgroup (SourceCgroup; v2: cpu.stat usage_usec against cpu.max and
// cpuset.cpus.effective; v1: cpuacct.usage against
// cpu.cfs_quota_us/cpu.cfs_period_us), the process's CPU time through
// gopsutil normalised by NumCPU (SourceProcess), or the whole machine's busy
// time from /proc/stat (SourceHost). The default, SourceAuto, takes the
// cgroup when it limits the CPU and the process otherwise, so that on a host
// other programs' load does not cut this one's rates. Utilisation is
// Δusage / (Δmonotonic time × min(quota, cpuset size, NumCPU)), clamped to
// [0, 1]. A failed read or
// a counter that goes backwards returns an error wrapping ErrSkipped and is
// counted; it is never read as 0.
//
// # Controlling
//
// The update rule is the pure function State.Next: an EWMA that rises fast
// and falls slowly, a hysteresis band around the target inside which the
// factor holds, multiplicative cuts in proportion to the overshoot (at most
// MaxCut, CutGap samples apart, never for a single spike), and raises of at
// most MaxRaise per step, not within RaiseHold samples of a cut. Each cut or
// raise is sized against the factors in force over the last Settle samples,
// so heat that an earlier cut has already answered does not cut again: this
// is what keeps it from flapping under dead time and lag.
//
// The idle-CPU boost (Config.Boost, off by default) lets the factor rise
// above 1 while the CPU is under Boost.Below, with the same raise steps and
// holds, and withdraws it once the CPU has been over Boost.Above for two
// samples; the gap between the two thresholds is its hysteresis band.
//
// A Controller runs that rule against a *flow.Engine: Step samples once and
// publishes changes of 1% or more with Engine.SetAdaptiveFactor; Start runs
// Step every Period until Close. State reports the factor, the smoothed CPU
// and the last decision with its reason.
//
// # Guarding
//
// With SystemGuard.CPU set, while the smoothed CPU is above it the engine
// admits a call only while in-flight calls are at most the completions per
// second times the smallest response time (summed per resource, best of the
// last two seconds); refused calls carry flow.LevelSystem. The engine counts
// the calls admitted since the guard switched on, so for about one response
// time after it does, calls already running are not counted.
//
// This package owns the settings of a rules document's "adaptive" section
// and their defaults (Config, Config.WithDefaults, Config.Check); package
// rules reads the section into a Config, and Controller.SetConfig applies a
// reloaded one.
package adaptive
