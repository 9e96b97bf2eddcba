package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/flowgate/flowgate/internal/testing/testbin"
)

// missingMessage is what a test says when etcd cannot be found.
const missingMessage = "etcd not found; install it (apt-get install etcd-server) or run make test"

// startAttempts bounds how often a start retries after losing a free port
// to another process.
const startAttempts = 5

// readyTimeout bounds how long a start waits for etcd to answer.
const readyTimeout = 20 * time.Second

// Server is one etcd process owned by a test. Endpoint stays the same for
// the Server's life, across Kill and Restart. Start, Kill and Restart must
// be called from the test's goroutine.
type Server struct {
	// Endpoint is the client URL, "http://127.0.0.1:port".
	Endpoint string

	t                    testing.TB
	bin, dir             string
	clientPort, peerPort int
	mu                   sync.Mutex
	cmd                  *exec.Cmd
	exited               chan struct{}
	clients              []*clientv3.Client
}

// Start runs a throwaway single-member etcd on free 127.0.0.1 ports with its
// data in t.TempDir(), and returns once it answers a read. It skips t when
// etcd is not installed (fails it if FLOWGATE_REQUIRE_ETCD=1).
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, bin: etcdServer.Find(t), dir: t.TempDir()}
	t.Cleanup(s.cleanup)
	var errs []error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		cp, err1 := freePort()
		pp, err2 := freePort()
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("etcdtest: pick ports: %v", err)
		}
		s.clientPort, s.peerPort = cp, pp
		s.Endpoint = "http://127.0.0.1:" + strconv.Itoa(cp)
		// A failed attempt may leave a member directory naming other ports.
		_ = os.RemoveAll(filepath.Join(s.dir, "data"))
		err := s.launch()
		if err == nil {
			return s
		}
		errs = append(errs, fmt.Errorf("attempt %d (ports %d, %d): %w", attempt, cp, pp, err))
	}
	t.Fatalf("etcdtest: start etcd: %v", errors.Join(errs...))
	return nil
}

// Client returns a new client for this server built from clientv3's defaults
// (as a user would) with a DialTimeout of 2s and a silent logger (the
// client's warnings on every retry would bury a failing test's message);
// it is closed in t.Cleanup.
func (s *Server) Client() *clientv3.Client {
	s.t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		s.t.Fatalf("etcdtest: client: %v", err)
	}
	s.mu.Lock()
	s.clients = append(s.clients, c)
	s.mu.Unlock()
	return c
}

// Kill crashes etcd with SIGKILL and waits until it is gone. Its data stays
// for Restart.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Restart starts etcd again on the same ports with the data it had, after a
// Kill (or kills it first), and returns once it answers.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	var err error
	// The ports were free a moment ago; another process may grab one, and
	// then there is nothing to do but report it.
	for range startAttempts {
		if err = s.launch(); err == nil {
			return
		}
		time.Sleep(200 * time.Millisecond) // the old socket may linger briefly
	}
	s.t.Fatalf("etcdtest: restart etcd: %v", err)
}

// launch starts the process and waits until a read succeeds.
func (s *Server) launch() error {
	peer := "http://127.0.0.1:" + strconv.Itoa(s.peerPort)
	logPath := filepath.Join(s.dir, "etcd.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(s.bin,
		"--name", "flowgate-test",
		"--data-dir", filepath.Join(s.dir, "data"),
		"--listen-client-urls", s.Endpoint, "--advertise-client-urls", s.Endpoint,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "flowgate-test="+peer, "--initial-cluster-state", "new",
		"--log-level", "warn", "--logger", "zap",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if err := s.waitReady(exited); err != nil {
		s.Kill()
		tail, _ := os.ReadFile(logPath)
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return fmt.Errorf("%w; log tail:\n%s", err, tail)
	}
	return nil
}

func (s *Server) waitReady(exited <-chan struct{}) error {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.Get(ctx, "etcdtest-ready")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("etcd exited during start-up")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd did not answer within %v: %w", readyTimeout, err)
		}
		time.Sleep(50 * time.Millisecond) // polling a process we started, not test logic
	}
}

func (s *Server) cleanup() {
	s.mu.Lock()
	clients := s.clients
	s.clients = nil
	s.mu.Unlock()
	for _, c := range clients {
		_ = c.Close()
	}
	s.Kill()
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// etcdServer is how tests find etcd: ETCD_SERVER, else PATH, else where
// Debian's etcd-server puts it.
var etcdServer = testbin.Binary{Override: "ETCD_SERVER", Names: []string{"etcd", "/usr/bin/etcd"},
	Require: "FLOWGATE_REQUIRE_ETCD", Missing: missingMessage}
