package redistest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// errPortTaken reports that another process held the port (or, for a cluster
// node, port+10000) when redis-server tried to bind it; the caller may retry
// on a new port.
var errPortTaken = errors.New("port already in use")

// busOffset is where Redis Cluster puts a node's bus port relative to its
// client port.
const busOffset = 10000

// freePort asks the kernel for a free loopback port by listening on port 0.
// With bus it also requires port+10000 to be free, as a cluster node binds
// both. The port is released before redis-server binds it, so another process
// can win it meanwhile; launch detects that and the caller retries.
func freePort(bus bool) (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !bus {
			l.Close()
			return port, nil
		}
		if port+busOffset > 65535 {
			l.Close()
			continue
		}
		lb, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+busOffset))
		l.Close()
		if err != nil {
			continue
		}
		lb.Close()
		return port, nil
	}
	return 0, errors.New("no free port pair (port, port+10000) found in 50 tries")
}

// run is one redis-server process.
type run struct {
	cmd   *exec.Cmd
	log   string        // the server's log file, kept across restarts
	logAt int64         // where this run's lines begin in log
	done  chan struct{} // closed once cmd.Wait has returned
	err   error         // cmd.Wait's result, written before done is closed
}

func (r *run) exited() bool {
	select {
	case <-r.done:
		return true
	default:
	}
	return false
}

// kill sends SIGKILL and reaps the process. It is a no-op for one that has
// already exited.
func (r *run) kill() {
	_ = r.cmd.Process.Kill() // fails only if the process is already gone
	<-r.done
}

// logTail returns up to n last lines this run wrote to its log.
func (r *run) logTail(n int) string { return logTail(r.log, r.logAt, n) }

// launch starts redis-server on port with the config in dir and waits until
// it answers INFO as the process it started. It returns errPortTaken (wrapped,
// with the log tail) when the port belonged to someone else.
func launch(bin, dir string, port int, cfg config) (*run, error) {
	r, err := startRun(bin, dir, port, cfg)
	if err != nil {
		return nil, err
	}
	if err := r.awaitReady(port, cfg.startTimeout); err != nil {
		return nil, err
	}
	return r, nil
}

// startRun writes the config for port into dir and starts redis-server on it,
// its output appended to dir's redis.log.
func startRun(bin, dir string, port int, cfg config) (*run, error) {
	conf := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(conf, []byte(cfg.render(port, dir)), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "redis.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer logf.Close() // the child holds its own descriptor
	// The log is kept across restarts; logAt marks where this run begins so
	// an error shows only its own lines.
	offset, err := logf.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, conf)
	cmd.Dir = dir
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	r := &run{cmd: cmd, log: logPath, logAt: offset, done: make(chan struct{})}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	return r, nil
}

// awaitReady waits until the server on port answers INFO as r's process.
// It kills r and fails when another process answers, when r exits first
// (errPortTaken when its bind failed), or after timeout.
func (r *run) awaitReady(port int, timeout time.Duration) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// If the port belongs to a listener that never answers, a probe would
	// block until its timeout; cancelling on exit ends it as soon as our
	// redis-server gives up the bind.
	probeCtx, stopProbes := context.WithCancel(context.Background())
	defer stopProbes()
	go func() {
		select {
		case <-r.done:
			stopProbes()
		case <-probeCtx.Done():
		}
	}()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	// Polling an external process: there is no event to wait on, so ask every
	// few milliseconds; a local redis-server is usually up within 10–30ms.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	pid := r.cmd.Process.Pid
	for {
		if got, err := probe(probeCtx, addr, 200*time.Millisecond); err == nil {
			if got == pid {
				return nil
			}
			// Another server owns the port; ours will fail to bind and exit.
			r.kill()
			return fmt.Errorf("%s answered as pid %d, not our pid %d: %w", addr, got, pid, errPortTaken)
		}
		select {
		case <-r.done:
			tail := r.logTail(20)
			if strings.Contains(tail, "Address already in use") {
				return fmt.Errorf("%s: %w\n%s", addr, errPortTaken, tail)
			}
			return fmt.Errorf("redis-server on %s exited before answering (%v); log tail:\n%s", addr, r.err, tail)
		case <-deadline.C:
			r.kill()
			return fmt.Errorf("redis-server on %s did not answer within %v; log tail:\n%s", addr, timeout, r.logTail(20))
		case <-tick.C:
		}
	}
}

// probe asks the server at addr for its process id with INFO server. Raw RESP
// keeps the start-up wait free of go-redis's dial-failure logging and retries.
func probe(ctx context.Context, addr string, timeout time.Duration) (int, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	defer context.AfterFunc(ctx, func() { c.Close() })()
	if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	if _, err := io.WriteString(c, "*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"); err != nil {
		return 0, err
	}
	r := bufio.NewReader(c)
	head, err := r.ReadString('\n')
	if err != nil {
		return 0, err
	}
	head = strings.TrimRight(head, "\r\n")
	if !strings.HasPrefix(head, "$") {
		return 0, fmt.Errorf("INFO reply %q", head) // e.g. -LOADING while starting
	}
	n, err := strconv.Atoi(head[1:])
	if err != nil || n < 0 {
		return 0, fmt.Errorf("INFO reply length %q", head)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, errors.New("INFO server has no process_id")
}

// logTail returns up to n last lines of the log written since offset.
func logTail(path string, offset int64, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if offset <= int64(len(b)) {
		b = b[offset:]
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
