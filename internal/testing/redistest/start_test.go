package redistest

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLocate(t *testing.T) {
	installed := func(name string) (string, error) { return "/usr/bin/" + filepath.Base(name), nil }
	absent := func(name string) (string, error) { return "", fs.ErrNotExist }
	tests := []struct {
		name      string
		env       map[string]string
		lookPath  func(string) (string, error)
		wantPath  string
		wantFatal bool
		wantMsg   string
	}{
		{name: "on PATH", lookPath: installed, wantPath: "/usr/bin/redis-server"},
		{name: "missing skips", lookPath: absent, wantMsg: missingMessage},
		{name: "missing but required fails", env: map[string]string{"FLOWGATE_REQUIRE_REDIS": "1"},
			lookPath: absent, wantFatal: true, wantMsg: missingMessage},
		{name: "REDIS_SERVER wins", env: map[string]string{"REDIS_SERVER": "/opt/r/redis-server7"},
			lookPath: installed, wantPath: "/usr/bin/redis-server7"},
		{name: "REDIS_SERVER wrong fails", env: map[string]string{"REDIS_SERVER": "/nope"},
			lookPath: absent, wantFatal: true, wantMsg: "REDIS_SERVER=/nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			path, msg, fatal := locate(getenv, tc.lookPath)
			if path != tc.wantPath || fatal != tc.wantFatal || !strings.Contains(msg, tc.wantMsg) {
				t.Fatalf("locate = %q, %q, %v; want %q, containing %q, %v",
					path, msg, fatal, tc.wantPath, tc.wantMsg, tc.wantFatal)
			}
		})
	}
}

// TestStartRetriesLostPort hands Start a port someone else holds first, as
// when a parallel test binary wins the race, and expects a retry on a new one.
// For a cluster node the held port is the bus port, port+10000.
func TestStartRetriesLostPort(t *testing.T) {
	for _, bus := range []bool{false, true} {
		t.Run(map[bool]string{false: "client port", true: "bus port"}[bus], func(t *testing.T) {
			held, blocked := holdPort(t, bus)
			var picks []int
			pick := func(bus bool) (int, error) {
				if len(picks) == 0 {
					picks = append(picks, held)
					return held, nil
				}
				p, err := freePort(bus)
				picks = append(picks, p)
				return p, err
			}
			cfg := newConfig([]Option{withPortPicker(pick)})
			cfg.bus = bus
			s := start(t, cfg)
			if len(picks) != 2 || s.Port == held || s.Port != picks[1] {
				t.Fatalf("picked %v, serving on %d; want a second pick after %d", picks, s.Port, held)
			}
			if log := s.Log(100); !strings.Contains(log, "Address already in use") || !strings.Contains(log, strconv.Itoa(blocked)) {
				t.Fatalf("log does not show the lost bind of %d:\n%s", blocked, log)
			}
		})
	}
}

// holdPort listens on a port for the rest of the test and returns the port
// to hand Start: that port, or with bus a port whose bus port is held.
func holdPort(t *testing.T, bus bool) (port, blocked int) {
	t.Helper()
	for range 50 {
		p, err := freePort(bus)
		if err != nil {
			t.Fatal(err)
		}
		blocked = p
		if bus {
			blocked = p + busOffset
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(blocked))
		if err != nil {
			continue // lost it already; try another
		}
		t.Cleanup(func() { l.Close() })
		return p, blocked
	}
	t.Fatal("could not hold a port in 50 tries")
	return 0, 0
}

// fakeServer writes a shell script standing in for redis-server.
func fakeServer(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-redis-server")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLaunchReportsEarlyExitWithLog(t *testing.T) {
	bin := fakeServer(t, `echo "fatal: bad config line 7"; exit 3`)
	port, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = launch(bin, t.TempDir(), port, newConfig(nil))
	if err == nil || errors.Is(err, errPortTaken) ||
		!strings.Contains(err.Error(), "exited before answering") ||
		!strings.Contains(err.Error(), "fatal: bad config line 7") {
		t.Fatalf("launch = %v; want an exit error quoting the log", err)
	}
}

func TestLaunchTimesOutAndKills(t *testing.T) {
	bin := fakeServer(t, `echo "stuck"; exec sleep 30`)
	port, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// 1s, not less: the fake's shell must have started and written its
	// line before the timeout for the error to quote it, on a loaded machine too.
	_, err = launch(bin, t.TempDir(), port, newConfig([]Option{WithStartTimeout(time.Second)}))
	if err == nil || !strings.Contains(err.Error(), "did not answer within 1s") || !strings.Contains(err.Error(), "stuck") {
		t.Fatalf("launch = %v; want a timeout error quoting the log", err)
	}
	// launch kills and reaps the process before returning, so it does not
	// take the 30s the fake would sleep.
	if d := time.Since(start); d > 6*time.Second {
		t.Fatalf("launch returned after %v", d)
	}
}

func TestRenderQuotesArguments(t *testing.T) {
	got := newConfig([]Option{WithConfig("rename-command", "FLUSHALL", "")}).render(6400, "/tmp/a b")
	for _, want := range []string{"port 6400\n", "save \"\"\n", "dir \"/tmp/a b\"\n", "rename-command FLUSHALL \"\"\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("redis.conf lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "cluster-enabled") {
		t.Errorf("plain server config enables cluster:\n%s", got)
	}
}

func TestCRC16CheckValue(t *testing.T) {
	// The Redis Cluster specification's check value for its CRC16 variant.
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16(\"123456789\") = %#x, want 0x31c3", got)
	}
}

// TestWaitReadyRejoinsIsolatedNode leaves node 2 out of the first MEETs, as
// when its half of a handshake is dropped on a loaded machine, and expects
// waitReady to bring it in with fresh MEETs.
func TestWaitReadyRejoinsIsolatedNode(t *testing.T) {
	t.Parallel()
	cfg := newConfig(nil)
	cfg.bus = true
	c := startNodes(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.assignSlots(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Nodes[0].Client().ClusterMeet(ctx, "127.0.0.1", strconv.Itoa(c.Nodes[1].Port)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.waitReady(ctx, t.Logf); err != nil {
		t.Fatalf("waitReady: %v\n%s", err, c.nodesReport())
	}
	for _, n := range c.Nodes {
		info, err := n.Client().ClusterInfo(ctx).Result()
		if got := parseInfo(info)["cluster_known_nodes"]; err != nil || got != "3" {
			t.Fatalf("node %s knows %q nodes (%v), want 3", n.Addr, got, err)
		}
	}
}
