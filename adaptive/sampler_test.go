package adaptive

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/flowgate/flowgate/clock"
)

// fakeFS is a fake root with /proc/self and a cgroup tree under it.
type fakeFS struct {
	t    *testing.T
	root string
}

func newFakeFS(t *testing.T) fakeFS {
	t.Helper()
	return fakeFS{t: t, root: t.TempDir()}
}

func (f fakeFS) write(p, content string) {
	f.t.Helper()
	full := filepath.Join(f.root, p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

const v2Mountinfo = `22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw
29 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
`

// v2 lays out a cgroup v2 process in /kubepods/pod1 with the given cpu.max
// and cpuset, usage in microseconds.
func (f fakeFS) v2(cpuMax, cpuset string) string {
	f.write("proc/self/cgroup", "0::/kubepods/pod1\n")
	f.write("proc/self/mountinfo", v2Mountinfo)
	dir := "sys/fs/cgroup/kubepods/pod1"
	if cpuMax != "" {
		f.write(dir+"/cpu.max", cpuMax+"\n")
	}
	if cpuset != "" {
		f.write(dir+"/cpuset.cpus.effective", cpuset+"\n")
	}
	f.v2Usage(0)
	return dir
}

func (f fakeFS) v2Usage(usec int64) {
	f.write("sys/fs/cgroup/kubepods/pod1/cpu.stat",
		"usage_usec "+itoa(usec)+"\nuser_usec 0\nsystem_usec 0\nnr_periods 0\n")
}

func itoa(v int64) string { return string(appendInt(nil, v)) }

func appendInt(b []byte, v int64) []byte {
	if v < 0 {
		return appendInt(append(b, '-'), -v)
	}
	if v >= 10 {
		b = appendInt(b, v/10)
	}
	return append(b, byte('0'+v%10))
}

func newFakeClock() *clock.Fake { return clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

// Requirement 6: the limit is min(quota, cpuset, NumCPU).
func TestCgroupV2Limit(t *testing.T) {
	cases := []struct {
		name, cpuMax, cpuset string
		numCPU               int
		want                 float64
	}{
		{"no quota, cpuset smaller", "max 100000", "0-3", 8, 4},
		{"no quota, NumCPU smaller", "max 100000", "0-15", 8, 8},
		{"no quota, no cpuset file", "max 100000", "", 6, 6},
		{"half a CPU", "50000 100000", "0-3", 8, 0.5},
		{"quota 2.5", "250000 100000", "0-7", 8, 2.5},
		{"cpuset list", "max 100000", "0,2,4-5", 8, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeFS(t)
			f.v2(c.cpuMax, c.cpuset)
			s, err := NewCgroupSampler(WithRoot(f.root), WithNumCPU(c.numCPU), WithSamplerClock(newFakeClock()))
			if err != nil {
				t.Fatal(err)
			}
			if s.Version() != 2 {
				t.Errorf("version = %d, want 2", s.Version())
			}
			got, err := s.Limit()
			if err != nil || got != c.want {
				t.Errorf("Limit() = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestCgroupV2ParentQuota(t *testing.T) {
	f := newFakeFS(t)
	f.v2("max 100000", "")
	f.write("sys/fs/cgroup/kubepods/cpu.max", "150000 100000\n")
	s, err := NewCgroupSampler(WithRoot(f.root), WithNumCPU(8), WithSamplerClock(newFakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Limit(); err != nil || got != 1.5 {
		t.Errorf("Limit() = %v, %v; want the parent's 1.5", got, err)
	}
}

// Requirement 6: usage over Δt × limit, clamped to 1; a read error or a
// decreasing counter skips the sample and is counted.
func TestCgroupV2Usage(t *testing.T) {
	f := newFakeFS(t)
	dir := f.v2("50000 100000", "0-3")
	clk := newFakeClock()
	s, err := NewCgroupSampler(WithRoot(f.root), WithNumCPU(4), WithSamplerClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	usage := int64(0)
	step := func(dUsec int64) (float64, error) {
		usage += dUsec
		f.v2Usage(usage)
		clk.Advance(250 * time.Millisecond)
		return s.CPU()
	}
	// 0.5 CPU limit over 250ms = 125000us of CPU at 100%.
	if got, err := step(100000); err != nil || math.Abs(got-0.8) > 1e-9 {
		t.Errorf("100ms over 250ms at 0.5 CPU: got %v, %v; want 0.8", got, err)
	}
	if got, err := step(200000); err != nil || got != 1 {
		t.Errorf("over the limit: got %v, %v; want clamped to 1", got, err)
	}
	usage = 100000 // counter goes backwards (300000 before): skipped and counted
	if got, err := step(0); !errors.Is(err, ErrSkipped) || got != 0 {
		t.Errorf("decreasing counter: got %v, %v; want ErrSkipped", got, err)
	}
	if s.Skipped() != 1 {
		t.Errorf("Skipped() = %d, want 1", s.Skipped())
	}
	if got, err := step(62500); err != nil || math.Abs(got-0.5) > 1e-9 {
		t.Errorf("after the reset: got %v, %v; want 0.5 from the new baseline", got, err)
	}
	// Read errors: missing file, garbage, missing usage line, bad cpu.max.
	broken := []func(){
		func() { os.Remove(filepath.Join(f.root, dir, "cpu.stat")) },
		func() { f.write(dir+"/cpu.stat", "usage_usec twelve\n") },
		func() { f.write(dir+"/cpu.stat", "user_usec 5\n") },
		func() { f.v2Usage(usage); f.write(dir+"/cpu.max", "lots\n") },
	}
	for i, breakIt := range broken {
		breakIt()
		clk.Advance(250 * time.Millisecond)
		if got, err := s.CPU(); !errors.Is(err, ErrSkipped) || got != 0 {
			t.Errorf("broken read %d: got %v, %v; want ErrSkipped", i, got, err)
		}
		if want := uint64(2 + i); s.Skipped() != want {
			t.Errorf("broken read %d: Skipped() = %d, want %d", i, s.Skipped(), want)
		}
	}
	// A clock that does not move skips rather than dividing by zero.
	f.write(dir+"/cpu.max", "50000 100000\n")
	if _, err := s.CPU(); err != nil {
		t.Fatalf("repaired tree: %v", err)
	}
	if _, err := s.CPU(); !errors.Is(err, ErrSkipped) {
		t.Errorf("zero elapsed time: err = %v, want ErrSkipped", err)
	}
}

const v1Mountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

// cgroup v1 (and the hybrid layout, where a v2 mount exists but holds no CPU
// controller): cpuacct.usage in ns, cfs quota/period.
func TestCgroupV1(t *testing.T) {
	f := newFakeFS(t)
	f.write("proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n0::/\n")
	f.write("proc/self/mountinfo", v1Mountinfo)
	d := "sys/fs/cgroup/cpu,cpuacct/docker/abc/"
	f.write(d+"cpuacct.usage", "0\n")
	f.write(d+"cpu.cfs_quota_us", "-1\n")
	f.write(d+"cpu.cfs_period_us", "100000\n")
	f.write("sys/fs/cgroup/cpuset/docker/abc/cpuset.effective_cpus", "0-1\n")
	f.write("sys/fs/cgroup/unified/cpu.stat", "usage_usec 999\n")
	clk := newFakeClock()
	s, err := NewCgroupSampler(WithRoot(f.root), WithNumCPU(4), WithSamplerClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if s.Version() != 1 {
		t.Fatalf("version = %d, want 1 (hybrid host: v1 holds cpuacct)", s.Version())
	}
	if got, _ := s.Limit(); got != 2 {
		t.Errorf("no quota: Limit() = %v, want the cpuset's 2", got)
	}
	f.write(d+"cpu.cfs_quota_us", "150000\n")
	if got, _ := s.Limit(); got != 1.5 {
		t.Errorf("quota 150000/100000: Limit() = %v, want 1.5", got)
	}
	f.write(d+"cpuacct.usage", "300000000\n") // 0.3 s of CPU
	clk.Advance(time.Second)
	if got, err := s.CPU(); err != nil || math.Abs(got-0.2) > 1e-9 {
		t.Errorf("0.3 s over 1 s at 1.5 CPUs: got %v, %v; want 0.2", got, err)
	}
	f.write(d+"cpuacct.usage", "100\n")
	clk.Advance(time.Second)
	if _, err := s.CPU(); !errors.Is(err, ErrSkipped) || s.Skipped() != 1 {
		t.Errorf("decreasing cpuacct.usage: err %v, skipped %d; want ErrSkipped, 1", err, s.Skipped())
	}
}

// In a container the mount's root is the container's own cgroup, or the path
// is not below it at all (cgroup namespace): the mount point is the cgroup.
func TestCgroupDirMapping(t *testing.T) {
	cases := []struct {
		root, point, path, want string
	}{
		{"/", "/sys/fs/cgroup", "/a/b", "/sys/fs/cgroup/a/b"},
		{"/a", "/sys/fs/cgroup", "/a/b", "/sys/fs/cgroup/b"},
		{"/a", "/sys/fs/cgroup", "/a", "/sys/fs/cgroup"},
		{"/a", "/sys/fs/cgroup", "/ab", "/sys/fs/cgroup"},
		{"/x/y", "/sys/fs/cgroup", "/", "/sys/fs/cgroup"},
	}
	for _, c := range cases {
		if got := cgroupDir(mount{root: c.root, point: c.point}, c.path); got != c.want {
			t.Errorf("cgroupDir(root %q, point %q, %q) = %q, want %q", c.root, c.point, c.path, got, c.want)
		}
	}
	if got := parseMountinfo([]byte(`1 0 0:1 / /sys/fs/my\040cg rw - cgroup2 none rw`)); len(got) != 1 || got[0].point != "/sys/fs/my cg" {
		t.Errorf("escaped mount point: got %+v", got)
	}
}

func TestCgroupNotFound(t *testing.T) {
	f := newFakeFS(t)
	f.write("proc/self/cgroup", "1:name=systemd:/\n")
	f.write("proc/self/mountinfo", "22 1 0:21 / /sys rw - sysfs sysfs rw\n")
	if _, err := NewCgroupSampler(WithRoot(f.root)); err == nil {
		t.Error("NewCgroupSampler on a tree without CPU accounting: want an error")
	}
	if _, ok := NewSampler(WithRoot(f.root)).(*ProcessSampler); !ok {
		t.Error("NewSampler without cgroup: want the process sampler fallback")
	}
}

func TestCountCPUList(t *testing.T) {
	for in, want := range map[string]int{"0": 1, "0-3": 4, "0-1,4,6-7": 5, "": 0} {
		if got, err := countCPUList(in); err != nil || got != want {
			t.Errorf("countCPUList(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"a", "3-1", "1-", "-1"} {
		if _, err := countCPUList(in); err == nil {
			t.Errorf("countCPUList(%q): want an error", in)
		}
	}
}

func TestProcessSampler(t *testing.T) {
	clk := newFakeClock()
	secs, fail := 0.0, false
	times := func(c *samplerConfig) {
		c.times = func() (float64, error) {
			if fail {
				return 0, errors.New("no such process")
			}
			return secs, nil
		}
	}
	s := NewProcessSampler(WithSamplerClock(clk), WithNumCPU(4), times)
	secs = 1 // one CPU-second over one second on 4 CPUs
	clk.Advance(time.Second)
	if got, err := s.CPU(); err != nil || got != 0.25 {
		t.Errorf("CPU() = %v, %v; want 0.25", got, err)
	}
	fail = true
	clk.Advance(time.Second)
	if _, err := s.CPU(); !errors.Is(err, ErrSkipped) || s.Skipped() != 1 {
		t.Errorf("failed read: err %v, skipped %d; want ErrSkipped, 1", err, s.Skipped())
	}
}

// The default sampler on this machine reads a sane value.
func TestDefaultSamplerHere(t *testing.T) {
	s := NewSampler()
	end := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(end) { // burn some CPU so there is something to see
		runtime.Gosched()
	}
	got, err := s.CPU()
	t.Logf("%T: %v, %v", s, got, err)
	if err != nil || got < 0 || got > 1 {
		t.Errorf("CPU() = %v, %v; want a value in [0, 1]", got, err)
	}
}

func BenchmarkSamplerCPU(b *testing.B) {
	for _, c := range []struct {
		name string
		s    Sampler
	}{{"default", NewSampler()}, {"process", NewProcessSampler()}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = c.s.CPU()
			}
		})
	}
}
