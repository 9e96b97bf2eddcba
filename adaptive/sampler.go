package adaptive

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/flowgate/flowgate/clock"
	"github.com/shirou/gopsutil/v4/process"
)

// Sampler reports the utilisation of the CPU this process may use.
type Sampler interface {
	// CPU returns the utilisation, 0..1, averaged since the previous call.
	// An error means the sample is unusable and must be skipped, never
	// read as 0.
	CPU() (float64, error)
}

// ErrSkipped is wrapped by every error a sampler of this package returns: the
// reading failed or made no sense (a counter went backwards), so the sample
// is skipped and counted.
var ErrSkipped = errors.New("adaptive: cpu sample skipped")

// SamplerOption configures NewSampler, NewCgroupSampler and NewProcessSampler.
type SamplerOption func(*samplerConfig)

type samplerConfig struct {
	root   string
	clk    clock.Clock
	numCPU int
	times  func() (float64, error) // process CPU seconds (tests replace it)
}

// WithRoot reads /proc and /sys under dir instead of "/", for tests against
// fake cgroup trees.
func WithRoot(dir string) SamplerOption { return func(c *samplerConfig) { c.root = dir } }

// WithSamplerClock sets the monotonic clock that times samples; default
// clock.Real().
func WithSamplerClock(clk clock.Clock) SamplerOption {
	return func(c *samplerConfig) { c.clk = clk }
}

// WithNumCPU sets the CPU count that bounds the limit; default
// runtime.NumCPU(), which honours the affinity mask.
func WithNumCPU(n int) SamplerOption { return func(c *samplerConfig) { c.numCPU = n } }

func newSamplerConfig(opts []SamplerOption) samplerConfig {
	c := samplerConfig{root: "/", clk: clock.Real(), numCPU: runtime.NumCPU()}
	for _, o := range opts {
		o(&c)
	}
	if c.numCPU < 1 {
		c.numCPU = 1
	}
	return c
}

// NewSampler returns the SourceAuto sampler: the process's cgroup (v1 or
// v2) when it limits the CPU, otherwise the process's own CPU time through
// gopsutil (see CPUSource for why not the cgroup of an unlimited process).
func NewSampler(opts ...SamplerOption) Sampler {
	s, _, _ := NewSamplerFor(SourceAuto, opts...) // auto always finds one
	return s
}

// delta turns a cumulative CPU-time counter into utilisation. It is shared by
// both samplers: a counter that goes backwards resets the baseline and skips.
type delta struct {
	mu        sync.Mutex
	prevUsage int64 // ns of CPU time
	prevTime  int64 // clock.Nanotime
	primed    bool
	skipped   atomic.Uint64
}

// next computes Δusage / (Δt × cpus), clamped to [0, 1].
func (d *delta) next(usage, now int64, cpus float64) (float64, error) {
	if !d.primed {
		d.prevUsage, d.prevTime, d.primed = usage, now, true
		return 0, fmt.Errorf("%w: first reading, no baseline yet", ErrSkipped)
	}
	du, dt := usage-d.prevUsage, now-d.prevTime
	if du < 0 {
		d.prevUsage, d.prevTime = usage, now
		return 0, d.skip(fmt.Errorf("usage counter went backwards by %dns", -du))
	}
	if dt <= 0 {
		return 0, d.skip(fmt.Errorf("monotonic clock did not advance (%dns)", dt))
	}
	d.prevUsage, d.prevTime = usage, now
	return clamp(float64(du)/(float64(dt)*cpus), 0, 1), nil
}

func (d *delta) skip(err error) error {
	d.skipped.Add(1)
	return fmt.Errorf("%w: %w", ErrSkipped, err)
}

// Skipped returns how many samples were skipped because a read failed or a
// counter went backwards.
func (d *delta) Skipped() uint64 { return d.skipped.Load() }

// CgroupSampler samples the CPU usage of this process's cgroup against what
// the cgroup may use: min(quota/period, cpuset size, NumCPU). The limit is
// re-read each sample, so a resized container is followed.
type CgroupSampler struct {
	cfg    samplerConfig
	layout cgroupLayout
	delta
}

var _ Sampler = (*CgroupSampler)(nil)

// NewCgroupSampler finds this process's cgroup and takes a first reading as
// the baseline. It fails when no cgroup CPU accounting is found.
func NewCgroupSampler(opts ...SamplerOption) (*CgroupSampler, error) {
	cfg := newSamplerConfig(opts)
	l, err := findCgroup(cfg.root)
	if err != nil {
		return nil, fmt.Errorf("adaptive: cgroup sampler: %w", err)
	}
	s := &CgroupSampler{cfg: cfg, layout: l}
	if _, err := readUsageNs(cfg.root, l); err != nil {
		return nil, fmt.Errorf("adaptive: cgroup sampler: %w", err)
	}
	_, _ = s.CPU() // the baseline
	return s, nil
}

// Version is the cgroup version in use, 1 or 2.
func (s *CgroupSampler) Version() int { return s.layout.version }

// Limit returns the CPUs this process may use now.
func (s *CgroupSampler) Limit() (float64, error) {
	q, set, err := readLimit(s.cfg.root, s.layout)
	if err != nil {
		return 0, err
	}
	lim := float64(s.cfg.numCPU)
	if q > 0 {
		lim = min(lim, q)
	}
	if set > 0 {
		lim = min(lim, float64(set))
	}
	return lim, nil
}

// CPU returns the cgroup's utilisation since the previous call.
func (s *CgroupSampler) CPU() (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := clock.Nanotime(s.cfg.clk)
	usage, err := readUsageNs(s.cfg.root, s.layout)
	if err != nil {
		return 0, s.skip(err)
	}
	lim, err := s.Limit()
	if err != nil {
		return 0, s.skip(err)
	}
	return s.next(usage, now, lim)
}

// ProcessSampler samples this process's CPU time (user + system, through
// gopsutil) normalised by NumCPU. It is the fallback where no cgroup is
// found. Unlike gopsutil's cpu.Percent(0) it keeps its own previous reading,
// so callers do not disturb each other.
type ProcessSampler struct {
	cfg samplerConfig
	delta
}

var _ Sampler = (*ProcessSampler)(nil)

// NewProcessSampler returns a sampler of this process's CPU time and takes a
// first reading as the baseline.
func NewProcessSampler(opts ...SamplerOption) *ProcessSampler {
	cfg := newSamplerConfig(opts)
	if cfg.times == nil {
		cfg.times = processTimes()
	}
	s := &ProcessSampler{cfg: cfg}
	_, _ = s.CPU()
	return s
}

// processTimes reads this process's CPU seconds through gopsutil.
func processTimes() func() (float64, error) {
	var (
		once sync.Once
		p    *process.Process
		perr error
	)
	return func() (float64, error) {
		once.Do(func() { p, perr = process.NewProcess(int32(os.Getpid())) })
		if perr != nil {
			return 0, perr
		}
		t, err := p.Times()
		if err != nil {
			return 0, err
		}
		return t.User + t.System, nil
	}
}

// CPU returns the process's utilisation since the previous call.
func (s *ProcessSampler) CPU() (float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := clock.Nanotime(s.cfg.clk)
	secs, err := s.cfg.times()
	if err != nil {
		return 0, s.skip(err)
	}
	return s.next(int64(secs*1e9), now, float64(s.cfg.numCPU))
}

// SamplerFunc adapts a function to Sampler, for injecting a CPU signal.
type SamplerFunc func() (float64, error)

// CPU returns f().
func (f SamplerFunc) CPU() (float64, error) { return f() }
