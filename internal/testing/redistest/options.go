package redistest

import (
	"fmt"
	"strings"
	"time"
)

// Option changes how Start and StartCluster run redis-server.
type Option func(*config)

type config struct {
	// extra holds redis.conf directives added after the package's own, so a
	// later line overrides an earlier one for single-valued directives.
	extra        [][]string
	startTimeout time.Duration
	// bus is set for cluster nodes, which also bind port+10000.
	bus bool
	// pickPort chooses a free port; tests replace it to force a bind race.
	pickPort func(bus bool) (int, error)
}

func newConfig(opts []Option) config {
	c := config{startTimeout: 10 * time.Second, pickPort: freePort}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithConfig adds the redis.conf directive `name args...`, for example
// WithConfig("maxmemory", "10mb") or, for a cluster,
// WithConfig("cluster-require-full-coverage", "no"). It comes after the
// package's own directives, so it overrides them.
func WithConfig(name string, args ...string) Option {
	return func(c *config) { c.extra = append(c.extra, append([]string{name}, args...)) }
}

// WithStartTimeout bounds how long a start (or Restart) waits for
// redis-server to answer. The default, 10s, is generous because two shared
// cores running several race-enabled test binaries can be slow to fork.
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) { c.startTimeout = d }
}

// withPortPicker replaces the free-port search; tests only.
func withPortPicker(pick func(bus bool) (int, error)) Option {
	return func(c *config) { c.pickPort = pick }
}

// clusterNodeTimeout (ms) is short so a test that kills a node sees the
// cluster notice within seconds, yet long enough that a loaded machine (two
// cores, several race-enabled test binaries) does not fail live nodes or drop
// join handshakes, both of which we saw at 1000.
const clusterNodeTimeout = "2000"

// render returns the redis.conf text for a server on port in dir.
func (c config) render(port int, dir string) string {
	lines := [][]string{
		{"port", fmt.Sprint(port)},
		{"bind", "127.0.0.1"},
		{"dir", dir},
		{"daemonize", "no"},
		{"logfile", ""}, // stdout, which start sends to redis.log
		{"save", ""},    // no RDB snapshots: every start is empty
		{"appendonly", "no"},
	}
	if c.bus {
		lines = append(lines,
			[]string{"cluster-enabled", "yes"},
			[]string{"cluster-config-file", "nodes.conf"},
			[]string{"cluster-node-timeout", clusterNodeTimeout},
		)
	}
	lines = append(lines, c.extra...)
	var b strings.Builder
	b.WriteString("# written by flowgate internal/testing/redistest\n")
	for _, l := range lines {
		for i, w := range l {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(quoteArg(w))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// quoteArg writes w so redis.conf's argument splitter reads it back intact:
// bare when safe, otherwise double-quoted with \" and \\ escaped.
func quoteArg(w string) string {
	if w != "" && !strings.ContainsAny(w, " \t\r\n\"'\\#") {
		return w
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(w) + `"`
}
