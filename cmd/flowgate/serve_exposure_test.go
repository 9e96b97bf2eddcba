package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/internal/testing/redistest"
)

// serve -listen 0.0.0.0:… -token-env X without TLS used to start, the
// bearer token crossing the network in clear. It now refuses before
// anything listens, unless TLS is on or -allow-cleartext-token says so.
func TestServeRefusesCleartextToken(t *testing.T) {
	t.Setenv("FG_TEST_TOKEN", "s3cret")
	for _, tc := range []struct {
		name             string
		cf               serveConfig
		wantErr, warning bool
	}{
		{"beyond loopback, token, no TLS", serveConfig{Listen: "0.0.0.0:7600"}, true, false},
		{"beyond loopback, token, TLS", serveConfig{Listen: "0.0.0.0:7600", TLS: tlsConfig{Cert: "c.pem", Key: "k.pem"}}, false, false},
		{"beyond loopback, token, client CA, no server cert", serveConfig{Listen: "[::]:7600", TLS: tlsConfig{ClientCA: "ca.pem"}}, true, false},
		{"override", serveConfig{Listen: "10.1.2.3:7600", AllowCleartextToken: true}, false, true},
		{"loopback", serveConfig{Listen: "127.0.0.1:7600"}, false, false},
	} {
		warning, err := tc.cf.exposure(true)
		if (err != nil) != tc.wantErr || (warning != "") != tc.warning {
			t.Errorf("%s: warning %q, err %v", tc.name, warning, err)
		}
	}
	var stdout, stderr strings.Builder
	code := serveUntil(context.Background(), []string{"-listen", "0.0.0.0:0", "-token-env", "FG_TEST_TOKEN"}, &stdout, &stderr)
	if code != exitInvalid || !strings.Contains(stderr.String(), "in clear") || !strings.Contains(stderr.String(), "-allow-cleartext-token") {
		t.Errorf("token without TLS beyond loopback: exit %d, stderr %q", code, stderr.String())
	}
	if stdout.Len() != 0 || strings.Contains(stderr.String(), "s3cret") {
		t.Errorf("refused serve printed %q, stderr %q", stdout.String(), stderr.String())
	}
}

// serve -metrics-listen 0.0.0.0:… used to open the admin reads (top keys:
// user ids and client IPs; rules) to the network with no token option. It
// now refuses unless -admin-read-token-env (then reads need the token) or
// -allow-open-admin-reads.
func TestServeRefusesOpenAdminReads(t *testing.T) {
	for _, tc := range []struct {
		name             string
		cf               serveConfig
		token            bool
		wantErr, warning bool
	}{
		{"no admin", serveConfig{}, false, false, false},
		{"loopback", serveConfig{MetricsListen: "127.0.0.1:9600"}, false, false, false},
		{"beyond loopback", serveConfig{MetricsListen: ":9600"}, false, true, false},
		{"beyond loopback, read token", serveConfig{MetricsListen: ":9600"}, true, false, false},
		{"override", serveConfig{MetricsListen: "0.0.0.0:9600", AllowOpenAdminReads: true}, false, false, true},
		{"metrics alone", serveConfig{MetricsListen: "0.0.0.0:9600", NoAdmin: true}, false, false, false},
	} {
		warning, err := tc.cf.adminExposure(tc.token)
		if (err != nil) != tc.wantErr || (warning != "") != tc.warning {
			t.Errorf("%s: warning %q, err %v", tc.name, warning, err)
		}
	}
	var stdout, stderr strings.Builder
	code := serveUntil(context.Background(), []string{"-metrics-listen", "0.0.0.0:0"}, &stdout, &stderr)
	if code != exitInvalid || !strings.Contains(stderr.String(), "admin reads") || !strings.Contains(stderr.String(), "-admin-read-token-env") {
		t.Errorf("open admin reads beyond loopback: exit %d, stderr %q", code, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("refused serve printed %q", stdout.String())
	}
}

// With a read token serve starts with its admin beyond loopback, and every
// admin read needs the token; with -no-admin it serves /metrics alone.
func TestServeAdminReadToken(t *testing.T) {
	srv := redistest.Start(t)
	t.Setenv("FG_TEST_READ", "look")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sv := startServe(t, ctx, "-listen", "127.0.0.1:0", "-metrics-listen", "0.0.0.0:0", "-admin-read-token-env", "FG_TEST_READ",
		"-redis", srv.Addr, "-timeout", "1s")
	_, port, _ := net.SplitHostPort(sv.metricsAddr)
	base := "http://127.0.0.1:" + port
	for _, path := range []string{"/flowgate/api/topkeys", "/flowgate/api/rules", "/flowgate/api/key?rule=r&key=k", "/flowgate/api/snapshot"} {
		for token, want := range map[string]int{"": 401, "nope": 401} {
			if got := adminGet(t, base+path, token); got != want {
				t.Errorf("GET %s with token %q: %d, want %d", path, token, got, want)
			}
		}
	}
	if got := adminGet(t, base+"/flowgate/api/topkeys", "look"); got != 200 {
		t.Errorf("GET topkeys with the read token: %d, want 200", got)
	}
	cancel()
	if got := <-sv.code; got != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", got, sv.stderr.String())
	}

	// With -no-admin, /metrics alone: no admin to read.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	sv = startServe(t, ctx, "-listen", "127.0.0.1:0", "-metrics-listen", "0.0.0.0:0", "-no-admin", "-redis", srv.Addr, "-timeout", "1s")
	_, port, _ = net.SplitHostPort(sv.metricsAddr)
	base = "http://127.0.0.1:" + port
	if got := adminGet(t, base+"/flowgate/api/topkeys", ""); got != 404 {
		t.Errorf("-no-admin: GET topkeys %d, want 404", got)
	}
	if got := adminGet(t, base+"/metrics", ""); got != 200 {
		t.Errorf("-no-admin: GET /metrics %d, want 200", got)
	}
	cancel()
	if got := <-sv.code; got != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", got, sv.stderr.String())
	}
}

func adminGet(t *testing.T, u, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
