package adaptive

import "github.com/flowgate/flowgate/adaptive/cpuconfig"

// The controller's settings live in package cpuconfig, which owns each of
// them, its default and its range; the names below are the same types, so
// a Config built here or read by package rules is one and the same.

type (
	// Config is cpuconfig.Config: the controller's and guard's settings.
	Config = cpuconfig.Config
	// SystemGuard is cpuconfig.SystemGuard: Sentinel-style system protection.
	SystemGuard = cpuconfig.SystemGuard
	// Boost is cpuconfig.Boost: the idle-CPU boost.
	Boost = cpuconfig.Boost
	// CPUSource is cpuconfig.CPUSource: what the default sampler measures.
	CPUSource = cpuconfig.CPUSource
)

// The CPU sources; see cpuconfig.CPUSource.
const (
	SourceAuto    = cpuconfig.SourceAuto
	SourceCgroup  = cpuconfig.SourceCgroup
	SourceProcess = cpuconfig.SourceProcess
	SourceHost    = cpuconfig.SourceHost
	SourceCustom  = cpuconfig.SourceCustom
)

// MaxSettle bounds Config.Settle; see cpuconfig.MaxSettle.
const MaxSettle = cpuconfig.MaxSettle

// Defaults returns the default configuration (cpuconfig.Defaults).
func Defaults() Config { return cpuconfig.Defaults() }

// ParseCPUSource reads "auto" (or ""), "cgroup", "process" or "host"
// (cpuconfig.ParseCPUSource).
func ParseCPUSource(s string) (CPUSource, error) { return cpuconfig.ParseCPUSource(s) }
