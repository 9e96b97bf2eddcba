package promtest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// missingMessage is what a test says when prometheus cannot be found.
const missingMessage = "prometheus not found; install it (apt-get install prometheus) or run make test"

// Config is what the server scrapes and evaluates.
type Config struct {
	// Targets are host:port addresses scraped at /metrics, as job "flowgate".
	Targets []string
	// Interval is both the scrape and the rule evaluation interval.
	// Default 1s.
	Interval time.Duration
	// RuleFiles are rule file contents by file name, loaded as rule_files.
	RuleFiles map[string]string
}

// Server is one running prometheus.
type Server struct {
	URL  string // http://127.0.0.1:port
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// Start starts prometheus with cfg, or skips t when it is not installed
// (fails t under FLOWGATE_REQUIRE_PROMETHEUS=1).
func Start(t testing.TB, cfg Config) *Server {
	t.Helper()
	bin := requireBinary(t)
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(conf, []byte(render(cfg, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range cfg.RuleFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var lastErr error
	for range 5 { // another process may take the free port before prometheus binds it
		s, err := launch(bin, dir, conf)
		if err == nil {
			t.Cleanup(s.stop)
			return s
		}
		lastErr = err
	}
	t.Fatalf("promtest: %v", lastErr)
	return nil
}

// requireBinary returns the prometheus path, or skips or fails t.
func requireBinary(t testing.TB) string {
	t.Helper()
	name := "prometheus"
	if p := os.Getenv("PROMETHEUS"); p != "" {
		name = p
	}
	path, err := exec.LookPath(name)
	switch {
	case err == nil:
		return path
	case os.Getenv("PROMETHEUS") != "" || os.Getenv("FLOWGATE_REQUIRE_PROMETHEUS") == "1":
		t.Fatalf("%s (%v)", missingMessage, err)
	default:
		t.Skip(missingMessage)
	}
	return ""
}

// render writes the prometheus.yml for cfg.
func render(cfg Config, dir string) string {
	var b strings.Builder
	iv := cfg.Interval.String()
	fmt.Fprintf(&b, "global:\n  scrape_interval: %s\n  evaluation_interval: %s\n", iv, iv)
	if len(cfg.RuleFiles) > 0 {
		b.WriteString("rule_files:\n")
		for name := range cfg.RuleFiles {
			fmt.Fprintf(&b, "  - %s\n", strconv.Quote(filepath.Join(dir, name)))
		}
	}
	b.WriteString("scrape_configs:\n  - job_name: flowgate\n    static_configs:\n      - targets: [")
	for i, t := range cfg.Targets {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(t))
	}
	b.WriteString("]\n")
	return b.String()
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts prometheus on a free port and waits for /-/ready.
func launch(bin, dir, conf string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin,
		"--config.file="+conf,
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr,
		"--log.level=warn",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &Server{URL: "http://" + addr, dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("prometheus exited at start:\n%s", log)
		default:
		}
		if resp, err := client.Get(s.URL + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(50 * time.Millisecond) // polling an external process's start, not test logic
	}
	s.stop()
	log, _ := os.ReadFile(logPath)
	return nil, fmt.Errorf("prometheus not ready on %s after 30s:\n%s", addr, log)
}

// stop kills prometheus and reaps it.
func (s *Server) stop() {
	_ = s.cmd.Process.Kill() // fails only when it has already exited
	<-s.done
}

// Log returns what prometheus has logged (warnings and errors).
func (s *Server) Log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "prometheus.log"))
	return string(b)
}
