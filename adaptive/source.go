package adaptive

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// NewSamplerFor returns the sampler of src and the source it measures (src
// itself, or what SourceAuto chose). SourceCgroup fails where no cgroup CPU
// accounting is found, SourceHost where /proc/stat cannot be read.
func NewSamplerFor(src CPUSource, opts ...SamplerOption) (Sampler, CPUSource, error) {
	src, err := ParseCPUSource(string(src))
	if err != nil {
		return nil, "", fmt.Errorf("adaptive: %w", err)
	}
	switch src {
	case SourceCgroup:
		s, err := NewCgroupSampler(opts...)
		if err != nil {
			return nil, "", err
		}
		return s, SourceCgroup, nil
	case SourceProcess:
		return NewProcessSampler(opts...), SourceProcess, nil
	case SourceHost:
		s, err := NewHostSampler(opts...)
		if err != nil {
			return nil, "", err
		}
		return s, SourceHost, nil
	}
	if s, err := NewCgroupSampler(opts...); err == nil && s.limited() {
		return s, SourceCgroup, nil
	}
	return NewProcessSampler(opts...), SourceProcess, nil
}

// limited reports whether the cgroup's CPU is capped below the machine's.
func (s *CgroupSampler) limited() bool {
	lim, err := s.Limit()
	return err == nil && lim < float64(s.cfg.numCPU)
}

// HostSampler samples the whole machine's CPU: the busy share of all CPUs'
// time in /proc/stat (everything but idle and iowait).
type HostSampler struct {
	cfg     samplerConfig
	mu      sync.Mutex
	prev    hostTimes
	skipped uint64
}

var _ Sampler = (*HostSampler)(nil)

type hostTimes struct{ busy, total uint64 }

// NewHostSampler reads /proc/stat once as the baseline; it fails where that
// file cannot be read (not Linux).
func NewHostSampler(opts ...SamplerOption) (*HostSampler, error) {
	s := &HostSampler{cfg: newSamplerConfig(opts)}
	t, err := s.read()
	if err != nil {
		return nil, fmt.Errorf("adaptive: host sampler: %w", err)
	}
	s.prev = t
	return s, nil
}

// CPU returns the machine's utilisation since the previous call.
func (s *HostSampler) CPU() (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.read()
	if err != nil {
		s.skipped++
		return 0, fmt.Errorf("%w: %w", ErrSkipped, err)
	}
	prev := s.prev
	s.prev = t
	if t.total <= prev.total || t.busy < prev.busy {
		s.skipped++
		return 0, fmt.Errorf("%w: /proc/stat did not advance", ErrSkipped)
	}
	return clamp(float64(t.busy-prev.busy)/float64(t.total-prev.total), 0, 1), nil
}

// Skipped returns how many samples were skipped.
func (s *HostSampler) Skipped() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skipped
}

// read parses the aggregate "cpu" line of /proc/stat: user nice system idle
// iowait irq softirq steal (guest time is already inside user and nice).
func (s *HostSampler) read() (hostTimes, error) {
	data, err := os.ReadFile(filepath.Join(s.cfg.root, "proc", "stat"))
	if err != nil {
		return hostTimes{}, err
	}
	line, _, _ := bytes.Cut(data, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 5 || string(f[0]) != "cpu" {
		return hostTimes{}, fmt.Errorf("/proc/stat: first line %q is not the cpu total", line)
	}
	var t hostTimes
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return hostTimes{}, fmt.Errorf("/proc/stat: %q: %w", v, err)
		}
		t.total += n
		if i != 3 && i != 4 { // idle, iowait
			t.busy += n
		}
	}
	return t, nil
}
