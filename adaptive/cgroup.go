package adaptive

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// mount is one cgroup line of /proc/self/mountinfo.
type mount struct {
	root, point string   // the mounted subtree and where it is mounted
	fstype      string   // "cgroup" (v1) or "cgroup2"
	opts        []string // super options; for v1 they name the controllers
}

// parseMountinfo returns the cgroup mounts of a mountinfo file. Format
// (proc(5)): id parent major:minor root point options [optional...] - fstype source superopts.
func parseMountinfo(data []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, p := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(p) < 3 || (p[0] != "cgroup" && p[0] != "cgroup2") {
			continue
		}
		out = append(out, mount{
			root: unescapeMount(f[3]), point: unescapeMount(f[4]),
			fstype: p[0], opts: strings.Split(p[2], ","),
		})
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// procCgroup is /proc/self/cgroup: the v2 path ("0::/path") and the v1 path
// of each controller ("4:cpu,cpuacct:/path").
type procCgroup struct {
	v2    string
	hasV2 bool
	v1    map[string]string
}

func parseProcCgroup(data []byte) procCgroup {
	pc := procCgroup{v1: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			pc.v2, pc.hasV2 = parts[2], true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "" {
				pc.v1[c] = parts[2]
			}
		}
	}
	return pc
}

// cgroupDir maps a cgroup path to its directory under a mount. When the path
// is not below the mount's root (a cgroup namespace, or a container that sees
// only its own subtree mounted at the mount point), the mount point itself is
// the process's cgroup.
func cgroupDir(m mount, cgPath string) string {
	rel := cgPath
	if m.root != "/" {
		if r, ok := strings.CutPrefix(cgPath, m.root); ok && (r == "" || r[0] == '/') {
			rel = r
		} else {
			rel = "/"
		}
	}
	return path.Join(m.point, rel)
}

// ancestors lists dir and its parents up to and including top.
func ancestors(dir, top string) []string {
	out := []string{dir}
	for dir != top && strings.HasPrefix(dir, top) {
		dir = path.Dir(dir)
		out = append(out, dir)
	}
	return out
}

// cgroupLayout is where the CPU accounting of this process's cgroup lives,
// as paths relative to the filesystem root (without it).
type cgroupLayout struct {
	version    int
	usage      string   // v2 cpu.stat, v1 cpuacct.usage
	quotaDirs  []string // cgroup dirs whose quota limits us: own first, then ancestors
	cpusetDirs []string // cgroup dirs that may hold the effective cpuset, own first
}

// findCgroup works out the layout from /proc/self/cgroup and mountinfo under
// root. Where v1 mounts the cpuacct controller (v1 or hybrid hosts) it wins,
// because then the v2 tree holds no CPU controller.
func findCgroup(root string) (cgroupLayout, error) {
	cgData, err := os.ReadFile(filepath.Join(root, "proc/self/cgroup"))
	if err != nil {
		return cgroupLayout{}, err
	}
	miData, err := os.ReadFile(filepath.Join(root, "proc/self/mountinfo"))
	if err != nil {
		return cgroupLayout{}, err
	}
	pc, mounts := parseProcCgroup(cgData), parseMountinfo(miData)
	v1mount := func(ctrl string) (mount, string, bool) {
		p, ok := pc.v1[ctrl]
		if !ok {
			return mount{}, "", false
		}
		for _, m := range mounts {
			if m.fstype != "cgroup" {
				continue
			}
			for _, o := range m.opts {
				if o == ctrl {
					return m, cgroupDir(m, p), true
				}
			}
		}
		return mount{}, "", false
	}
	if m, dir, ok := v1mount("cpuacct"); ok {
		dir = existingDir(root, dir, m.point)
		l := cgroupLayout{version: 1, usage: path.Join(dir, "cpuacct.usage")}
		if cm, cdir, ok := v1mount("cpu"); ok {
			l.quotaDirs = ancestors(existingDir(root, cdir, cm.point), cm.point)
		}
		if sm, sdir, ok := v1mount("cpuset"); ok {
			l.cpusetDirs = ancestors(existingDir(root, sdir, sm.point), sm.point)
		}
		return l, nil
	}
	if pc.hasV2 {
		for _, m := range mounts {
			if m.fstype != "cgroup2" {
				continue
			}
			dir := existingDir(root, cgroupDir(m, pc.v2), m.point)
			dirs := ancestors(dir, m.point)
			return cgroupLayout{version: 2, usage: path.Join(dir, "cpu.stat"), quotaDirs: dirs, cpusetDirs: dirs}, nil
		}
	}
	return cgroupLayout{}, errors.New("no cgroup CPU accounting found")
}

// existingDir returns dir if it exists under root, else the mount point.
func existingDir(root, dir, point string) string {
	if st, err := os.Stat(filepath.Join(root, dir)); err == nil && st.IsDir() {
		return dir
	}
	return point
}

// readUsageNs reads the cgroup's CPU usage counter in nanoseconds.
func readUsageNs(root string, l cgroupLayout) (int64, error) {
	data, err := os.ReadFile(filepath.Join(root, l.usage))
	if err != nil {
		return 0, err
	}
	if l.version == 1 {
		v, err := strconv.ParseInt(string(bytes.TrimSpace(data)), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", l.usage, err)
		}
		return v, nil
	}
	for line := range bytes.Lines(data) {
		if v, ok := bytes.CutPrefix(line, []byte("usage_usec ")); ok {
			us, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: usage_usec: %w", l.usage, err)
			}
			return us * 1000, nil
		}
	}
	return 0, fmt.Errorf("%s: no usage_usec line", l.usage)
}

// readLimit returns the CPUs the cgroup may use: the smallest quota of the
// cgroup and its ancestors, and the size of the effective cpuset; 0 for each
// that is not set. Missing files mean "no limit there"; unreadable or
// malformed ones are errors.
func readLimit(root string, l cgroupLayout) (quota float64, cpuset int, err error) {
	for _, dir := range l.quotaDirs {
		q, ok, err := readQuota(root, dir, l.version)
		if err != nil {
			return 0, 0, err
		}
		if ok && (quota == 0 || q < quota) {
			quota = q
		}
	}
	name := "cpuset.cpus.effective"
	if l.version == 1 {
		name = "cpuset.effective_cpus"
	}
	for _, dir := range l.cpusetDirs {
		p := path.Join(dir, name)
		data, err := os.ReadFile(filepath.Join(root, p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, 0, err
		}
		n, err := countCPUList(string(bytes.TrimSpace(data)))
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", p, err)
		}
		if n > 0 {
			cpuset = n
			break
		}
	}
	return quota, cpuset, nil
}

// readQuota reads one cgroup's CPU quota in CPUs; ok is false when it has none.
func readQuota(root, dir string, version int) (q float64, ok bool, err error) {
	if version == 2 {
		p := path.Join(dir, "cpu.max")
		data, err := os.ReadFile(filepath.Join(root, p))
		if errors.Is(err, fs.ErrNotExist) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		f := strings.Fields(string(data))
		if len(f) != 2 {
			return 0, false, fmt.Errorf("%s: want \"quota period\", got %q", p, strings.TrimSpace(string(data)))
		}
		if f[0] == "max" {
			return 0, false, nil
		}
		return quotaRatio(p, f[0], f[1])
	}
	qp, pp := path.Join(dir, "cpu.cfs_quota_us"), path.Join(dir, "cpu.cfs_period_us")
	qd, err := os.ReadFile(filepath.Join(root, qp))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	qs := strings.TrimSpace(string(qd))
	if qs == "-1" {
		return 0, false, nil
	}
	pd, err := os.ReadFile(filepath.Join(root, pp))
	if err != nil {
		return 0, false, err
	}
	return quotaRatio(qp, qs, strings.TrimSpace(string(pd)))
}

func quotaRatio(p, qs, ps string) (float64, bool, error) {
	q, err1 := strconv.ParseInt(qs, 10, 64)
	per, err2 := strconv.ParseInt(ps, 10, 64)
	if err1 != nil || err2 != nil || q <= 0 || per <= 0 {
		return 0, false, fmt.Errorf("%s: bad quota %q / period %q", p, qs, ps)
	}
	return float64(q) / float64(per), true, nil
}

// countCPUList counts the CPUs of a list such as "0-3,8,10-11".
func countCPUList(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n := 0
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return 0, fmt.Errorf("bad cpu list %q", s)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return 0, fmt.Errorf("bad cpu list %q", s)
			}
		}
		n += b - a + 1
	}
	return n, nil
}
