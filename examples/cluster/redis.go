package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisProc is a throwaway redis-server: loopback, a temporary directory,
// no persistence.
type redisProc struct {
	addr string
	cmd  *exec.Cmd
	dir  string
}

func startRedis(ctx context.Context, bin string) (*redisProc, error) {
	dir, err := os.MkdirTemp("", "flowgate-cluster-example-")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--logfile", "redis.log")
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p := &redisProc{addr: "127.0.0.1:" + strconv.Itoa(port), cmd: cmd, dir: dir}
	rdb := redis.NewClient(&redis.Options{Addr: p.addr, MaxRetries: -1})
	defer rdb.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		err := rdb.Ping(pctx).Err()
		cancel()
		if err == nil {
			return p, nil
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("redis-server on %s did not answer in 5s: %w", p.addr, err)
		}
		time.Sleep(20 * time.Millisecond) // waiting for the process to listen
	}
}

// stop kills the server, reaps it and removes its directory.
func (p *redisProc) stop() {
	if p.cmd.Process != nil {
		p.cmd.Process.Kill()
		p.cmd.Wait()
	}
	os.RemoveAll(p.dir)
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before redis-server binds it; then startRedis fails, and a rerun
// picks another.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("not a TCP address")
	}
	return addr.Port, nil
}
