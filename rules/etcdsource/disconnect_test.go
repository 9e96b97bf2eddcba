package etcdsource

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/flowgate/flowgate/internal/testing/etcdtest"
)

// cutProxy forwards loopback TCP to etcd and can cut every connection and
// refuse new ones, as a network partition between one service and etcd
// would, while etcd goes on taking writes from others.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.setCut(true)
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns = append(p.conns, c, up)
		p.wg.Add(2)
		p.mu.Unlock()
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// setCut cuts (closing every open connection) or restores the link.
func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// TestResumeAfterDisconnect: while one service is cut off from etcd, others
// write to it; when the link is back the service's watch resumes from the
// last revision it saw and delivers the newest document. If the revisions
// it missed were compacted meanwhile, it reads the key again.
func TestResumeAfterDisconnect(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client()
	put(t, c, limitDoc(3))
	proxy := startProxy(t, strings.TrimPrefix(srv.Endpoint, "http://"))
	cut, err := clientv3.New(clientv3.Config{Endpoints: []string{proxy.ln.Addr().String()}, Logger: zap.NewNop()}) // its retry warnings would flood the output
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cut.Close() })
	// No check reads: what arrives comes through the resumed watch.
	var log lockedBuffer
	r := startRig(t, New(cut, key, append(watchOnly, WithLogger(slog.New(slog.NewTextHandler(&log, nil))))...))

	proxy.setCut(true)
	put(t, c, limitDoc(4))
	put(t, c, limitDoc(5))
	put(t, c, limitDoc(6))
	proxy.setCut(false)
	r.waitLimit(6)
	if strings.Contains(log.String(), "compacted") {
		t.Errorf("the first resume met a compaction that never happened:\n%s", log.String())
	}

	proxy.setCut(true)
	put(t, c, limitDoc(7))
	last := put(t, c, limitDoc(8))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Compact(ctx, last); err != nil {
		t.Fatal(err)
	}
	proxy.setCut(false)
	r.waitLimit(8)
	if !strings.Contains(log.String(), "watch revision compacted, reading the key again") {
		t.Errorf("the second resume did not go through the compaction path:\n%s", log.String())
	}
	put(t, c, limitDoc(9))
	r.waitLimit(9)
}

// lockedBuffer is a log destination the source's goroutine writes while the
// test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
