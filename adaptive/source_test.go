package adaptive

import (
	"errors"
	"testing"

	"github.com/flowgate/flowgate/flow"
)

// auto measures the cgroup only where it limits this process's CPU; on a
// host without a limit the cgroup holds other programs, so auto measures
// the process instead.
func TestCPUSourceAuto(t *testing.T) {
	for _, c := range []struct {
		name, cpuMax, cpuset string
		want                 CPUSource
	}{
		{"quota", "50000 100000", "0-7", SourceCgroup},
		{"cpuset smaller than the machine", "max 100000", "0-1", SourceCgroup},
		{"no limit", "max 100000", "0-7", SourceProcess},
		{"no limit, no cpuset file", "max 100000", "", SourceProcess},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeFS(t)
			f.v2(c.cpuMax, c.cpuset)
			opts := []SamplerOption{WithRoot(f.root), WithNumCPU(8), WithSamplerClock(newFakeClock())}
			s, got, err := NewSamplerFor(SourceAuto, opts...)
			if err != nil || got != c.want {
				t.Fatalf("NewSamplerFor(auto) = %T, %q, %v; want %q", s, got, err, c.want)
			}
			// Asked for explicitly, cgroup is used whatever the limit.
			if _, got, err := NewSamplerFor(SourceCgroup, opts...); err != nil || got != SourceCgroup {
				t.Errorf("NewSamplerFor(cgroup) = %q, %v", got, err)
			}
		})
	}
	f := newFakeFS(t) // no cgroup at all
	if _, got, err := NewSamplerFor("", WithRoot(f.root)); err != nil || got != SourceProcess {
		t.Errorf("no cgroup: auto chose %q, %v; want process", got, err)
	}
	if _, _, err := NewSamplerFor(SourceCgroup, WithRoot(f.root)); err == nil {
		t.Error("cgroup asked for where there is none: no error")
	}
	if _, _, err := NewSamplerFor("machine"); err == nil {
		t.Error(`NewSamplerFor("machine"): no error`)
	}
}

func TestHostSampler(t *testing.T) {
	f := newFakeFS(t)
	//                  user nice system idle iowait irq softirq steal guest guest_nice
	f.write("proc/stat", "cpu  100 0 100 700 100 0 0 0 50 0\ncpu0 1 2 3 4\n")
	s, err := NewHostSampler(WithRoot(f.root))
	if err != nil {
		t.Fatal(err)
	}
	// +300 busy (user 200, system 50, steal 50) and +100 idle, +0 iowait.
	f.write("proc/stat", "cpu  300 0 150 800 100 0 0 50 50 0\n")
	got, err := s.CPU()
	if err != nil || got != 0.75 {
		t.Errorf("CPU() = %v, %v; want 0.75", got, err)
	}
	if _, err := s.CPU(); !errors.Is(err, ErrSkipped) { // nothing moved
		t.Errorf("unchanged /proc/stat: %v, want ErrSkipped", err)
	}
	f.write("proc/stat", "intr 1 2 3\n")
	if _, err := s.CPU(); !errors.Is(err, ErrSkipped) || s.Skipped() != 2 {
		t.Errorf("garbage: %v (skipped %d), want ErrSkipped, 2", err, s.Skipped())
	}
	if _, err := NewHostSampler(WithRoot(t.TempDir())); err == nil {
		t.Error("no /proc/stat: no error")
	}
}

// The controller says which source it measures; a bad source in the config
// disables it with a clear error.
func TestControllerCPUSource(t *testing.T) {
	eng := flow.NewEngine()
	if c := NewController(eng, WithSampler(SamplerFunc(func() (float64, error) { return 0.5, nil }))); c.CPUSource() != SourceCustom {
		t.Errorf("WithSampler: CPUSource() = %q, want custom", c.CPUSource())
	}
	c := NewController(eng, WithConfig(Config{CPUSource: SourceProcess}))
	if c.Err() != nil || c.CPUSource() != SourceProcess {
		t.Errorf("process: CPUSource() = %q, err %v", c.CPUSource(), c.Err())
	}
	c = NewController(eng, WithConfig(Config{CPUSource: "machine"}))
	if c.Err() == nil || c.CPUSource() != "" {
		t.Errorf("bad source: CPUSource() = %q, err %v; want an error", c.CPUSource(), c.Err())
	}
	if got := (Config{}).WithDefaults().CPUSource; got != SourceAuto {
		t.Errorf("default CPUSource %q, want auto", got)
	}
}
