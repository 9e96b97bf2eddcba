package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// portAttempts bounds how often a start retries after losing its free port
// to another process.
const portAttempts = 10

// Server is one redis-server process owned by a test. Addr and Port stay the
// same for the Server's life, across Kill and Restart. Methods that can fail
// the test (Restart, Pause, Resume) must be called from the test's goroutine.
type Server struct {
	Addr string // "127.0.0.1:port"
	Port int    // the port of Addr

	t   testing.TB
	cfg config
	bin string
	dir string

	mu      sync.Mutex
	cur     *run // the latest process; nil only before the first start
	paused  bool
	client  *redis.Client
	clients []*redis.Client // every client handed out, closed in cleanup
}

// Start runs a throwaway redis-server on a free 127.0.0.1 port in
// t.TempDir(), with no persistence, and returns once it answers. It skips t
// when redis-server is not installed (fails it if FLOWGATE_REQUIRE_REDIS=1).
// The process and every client handed out are stopped in t.Cleanup.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	return start(t, newConfig(opts))
}

func start(t testing.TB, cfg config) *Server {
	t.Helper()
	s := &Server{t: t, cfg: cfg, bin: requireServer(t), dir: t.TempDir()}
	t.Cleanup(s.cleanup)
	var errs []error
	for attempt := 1; ; attempt++ {
		port, err := cfg.pickPort(cfg.bus)
		if err != nil {
			t.Fatalf("redistest: pick a port: %v", err)
		}
		// A lost race may leave a cluster config naming the old port.
		_ = os.Remove(filepath.Join(s.dir, "nodes.conf"))
		r, err := launch(s.bin, s.dir, port, cfg)
		if err == nil {
			s.cur, s.Port = r, port
			s.Addr = "127.0.0.1:" + strconv.Itoa(port)
			return s
		}
		errs = append(errs, fmt.Errorf("attempt %d on port %d: %w", attempt, port, err))
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			t.Fatalf("redistest: start redis-server: %v", errors.Join(errs...))
		}
	}
}

// ClientOptions returns fresh go-redis options for this server: go-redis
// defaults except for fast failure, which tests of a dead or frozen Redis
// need: DialTimeout 1s with one dial attempt, Read/WriteTimeout 2s, and
// ContextTimeoutEnabled so a context deadline bounds each call.
func (s *Server) ClientOptions() *redis.Options {
	return &redis.Options{
		Addr:                  s.Addr,
		DialTimeout:           time.Second,
		DialerRetries:         1,
		ReadTimeout:           2 * time.Second,
		WriteTimeout:          2 * time.Second,
		ContextTimeoutEnabled: true,
		// Redis 7.0 has no CLIENT SETINFO; skip the failing call per connection.
		DisableIdentity: true,
	}
}

// Client returns the Server's shared client, made from ClientOptions and
// closed in t.Cleanup. It survives Kill and Restart (its pool redials).
func (s *Server) Client() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client == nil {
		s.client = redis.NewClient(s.ClientOptions())
		s.clients = append(s.clients, s.client)
	}
	return s.client
}

// NewClient returns a new client with opts (Addr is forced to this server's),
// closed in t.Cleanup. Start from ClientOptions to change a single field;
// nil means ClientOptions.
func (s *Server) NewClient(opts *redis.Options) *redis.Client {
	if opts == nil {
		opts = s.ClientOptions()
	}
	o := *opts
	o.Addr = s.Addr
	c := redis.NewClient(&o)
	s.mu.Lock()
	s.clients = append(s.clients, c)
	s.mu.Unlock()
	return c
}

// Kill stops the server with SIGKILL, as a crash would, and waits until the
// process is gone. Killing a dead server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.kill()
	s.paused = false
}

// Restart kills the server if it is running and starts a new, empty one on
// the same port: no keys and an empty script cache. A cluster node keeps its
// nodes.conf, so it rejoins with the same id and slots. It fails the test if
// the port was taken meanwhile or the server does not come up.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cur.kill()
	s.paused = false
	_ = os.Remove(filepath.Join(s.dir, "dump.rdb")) // belt and braces; save is off
	r, err := launch(s.bin, s.dir, s.Port, s.cfg)
	if err != nil {
		s.t.Fatalf("redistest: restart redis-server on %s: %v", s.Addr, err)
	}
	s.cur = r
}

// Pause freezes the server with SIGSTOP. The kernel still accepts
// connections, but no command is answered until Resume: a slow Redis, not a
// dead one. Cleanup resumes a paused server before killing it.
func (s *Server) Pause() {
	s.t.Helper()
	s.signal("Pause", stopSignal, true)
}

// Resume lets a paused server run again with SIGCONT.
func (s *Server) Resume() {
	s.t.Helper()
	s.signal("Resume", contSignal, false)
}

func (s *Server) signal(name string, sig os.Signal, paused bool) {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur.exited() {
		s.t.Fatalf("redistest: %s: redis-server on %s is not running", name, s.Addr)
	}
	if err := s.cur.cmd.Process.Signal(sig); err != nil {
		s.t.Fatalf("redistest: %s: %v", name, err)
	}
	s.paused = paused
}

// Running reports whether the server process is alive (paused counts).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.cur.exited()
}

// PID returns the process id of the current redis-server process.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur.cmd.Process.Pid
}

// Dir returns the server's working directory (redis.conf, redis.log and, for
// a cluster node, nodes.conf).
func (s *Server) Dir() string { return s.dir }

// Log returns the last n lines of the server's log, across restarts.
func (s *Server) Log(n int) string { return logTail(filepath.Join(s.dir, "redis.log"), 0, n) }

// CLI runs redis-cli against the server with args (e.g. "CLUSTER", "NODES")
// and returns its combined output. redis-cli comes from REDIS_CLI, beside
// redis-server, or PATH. The call is bounded by ctx.
func (s *Server) CLI(ctx context.Context, args ...string) (string, error) {
	cli, err := cliPath(s.bin)
	if err != nil {
		return "", fmt.Errorf("redis-cli not found: %w", err)
	}
	argv := append([]string{"-h", "127.0.0.1", "-p", strconv.Itoa(s.Port)}, args...)
	out, err := exec.CommandContext(ctx, cli, argv...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("redis-cli %v: %w", args, err)
	}
	return string(out), nil
}

// cleanup closes the clients, then resumes and kills the process and reaps it.
func (s *Server) cleanup() {
	s.mu.Lock()
	clients := s.clients
	s.clients, s.client = nil, nil
	s.mu.Unlock()
	for _, c := range clients {
		_ = c.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return // never started
	}
	if s.paused && !s.cur.exited() {
		// SIGKILL ends a stopped process too; resuming first is what the
		// contract promises and lets a debugger-attached run end cleanly.
		_ = s.cur.cmd.Process.Signal(contSignal)
	}
	s.cur.kill()
	s.paused = false
	if s.t.Failed() {
		s.t.Logf("redistest: redis-server %s log tail:\n%s", s.Addr, s.Log(20))
	}
}
