package cpuconfig

import "fmt"

// CPUSource names what the controller's default sampler measures. The
// choice matters: on a host where this process has no CPU limit, its cgroup
// (a systemd slice, or the root) holds other programs, and their load would
// cut this program's rates.
type CPUSource string

const (
	// SourceAuto (the default, also "") is SourceCgroup when this process's
	// cgroup limits its CPU (a quota or a cpuset smaller than the machine,
	// as in a container with a CPU limit) and SourceProcess otherwise.
	SourceAuto CPUSource = "auto"
	// SourceCgroup is the CPU time of this process's cgroup against what the
	// cgroup may use: every process in the container counts.
	SourceCgroup CPUSource = "cgroup"
	// SourceProcess is this process's own CPU time against the CPUs it may
	// run on: other programs' load does not count.
	SourceProcess CPUSource = "process"
	// SourceHost is the whole machine's busy time (/proc/stat): anything
	// running on the host counts. For a host that runs only this service.
	SourceHost CPUSource = "host"
	// SourceCustom is what a controller reports for a sampler its caller
	// gave (adaptive.WithSampler); a Config may not name it.
	SourceCustom CPUSource = "custom"
)

// ParseCPUSource reads "auto" (or ""), "cgroup", "process" or "host".
func ParseCPUSource(s string) (CPUSource, error) {
	switch c := CPUSource(s); c {
	case "", SourceAuto:
		return SourceAuto, nil
	case SourceCgroup, SourceProcess, SourceHost:
		return c, nil
	}
	return "", fmt.Errorf("cpu source %q: must be auto, cgroup, process or host", s)
}
