package admin_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/admin"
	"github.com/flowgate/flowgate/flow"
)

// certFor issues a certificate for cn signed by ca (self-signed when ca is nil).
func certFor(t *testing.T, cn string, ca *tls.Certificate, isCA bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		IsCA:        isCA, BasicConstraintsValid: true, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca.Leaf, ca.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

func TestWriteMTLS(t *testing.T) {
	ca := certFor(t, "test CA", nil, true)
	other := certFor(t, "other CA", nil, true)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)

	eng := flow.NewEngine()
	if err := eng.LoadRules([]flow.Rule{{ID: "u", Resource: "r", Level: flow.LevelUser, Algorithm: flow.AlgoFixedWindow, Limit: 1}}); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(admin.New(eng, admin.WithWriteMTLS("ops")))
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool, Certificates: []tls.Certificate{certFor(t, "127.0.0.1", &ca, false)}}
	srv.StartTLS()
	defer srv.Close()

	for _, c := range []struct {
		name string
		cert *tls.Certificate
		want int
	}{
		{"no certificate", nil, 401},
		{"CN not allowed", ptr(certFor(t, "intern", &ca, false)), 401},
		{"allowed CN", ptr(certFor(t, "ops", &ca, false)), 200},
	} {
		tc := &tls.Config{RootCAs: pool}
		if c.cert != nil {
			tc.Certificates = []tls.Certificate{*c.cert}
		}
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
		res, err := cl.Post(srv.URL+"/api/key/reset?rule=u&key=a", "application/json", nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		res.Body.Close()
		if res.StatusCode != c.want {
			t.Errorf("%s: got %d, want %d", c.name, res.StatusCode, c.want)
		}
		cl.CloseIdleConnections()
	}
	// A certificate from a CA the server does not trust is never a write
	// credential: Go's client does not even offer it (the server names the
	// CAs it accepts), so the request arrives without one.
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{certFor(t, "ops", &other, false)}}}}
	res, err := cl.Post(srv.URL+"/api/key/reset?rule=u&key=a", "text/plain", nil)
	if err == nil {
		res.Body.Close()
		if res.StatusCode != 401 {
			t.Fatalf("untrusted client certificate: got %d, want 401 or a failed handshake", res.StatusCode)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// A page on another site can make the operator's browser POST a form to
// the admin, and the browser attaches the client certificate: with
// WithWriteMTLS that request was a valid write. Writes now refuse any
// request a browser marks as cross-site (403), and any body not declared
// JSON (415), which a form cannot declare; on every write endpoint, and
// before the engine is touched.
func TestWritesRefuseCrossSiteAndForms(t *testing.T) {
	ca := certFor(t, "test CA", nil, true)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	eng := flow.NewEngine()
	if err := eng.LoadRules([]flow.Rule{{ID: "u", Resource: "r", Level: flow.LevelUser, Algorithm: flow.AlgoFixedWindow, Limit: 1}}); err != nil {
		t.Fatal(err)
	}
	eng.Entry("r", flow.WithUser("a"))
	srv := httptest.NewUnstartedServer(admin.New(eng, admin.WithWriteMTLS("ops")))
	srv.TLS = &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: pool, Certificates: []tls.Certificate{certFor(t, "127.0.0.1", &ca, false)}}
	srv.StartTLS()
	defer srv.Close()
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{certFor(t, "ops", &ca, false)}}}}
	defer cl.CloseIdleConnections()

	form := "application/x-www-form-urlencoded"
	for _, c := range []struct {
		name, method, path, ctype, body string
		header                          map[string]string
		want                            int
	}{
		{"cross-site form (Origin)", "POST", "/api/key/reset", form, "rule=u&key=a", map[string]string{"Origin": "https://evil.example"}, 403},
		{"cross-site form (Sec-Fetch-Site)", "POST", "/api/key/reset", form, "rule=u&key=a", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}, 403},
		{"cross-site JSON", "POST", "/api/key/reset?rule=u&key=a", "application/json", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"same-site subdomain", "PUT", "/api/rules", "application/json", `{"rules": []}`, map[string]string{"Sec-Fetch-Site": "same-site"}, 403},
		{"cross-site PUT", "PUT", "/api/rules", "application/json", `{"rules": []}`, map[string]string{"Origin": "https://evil.example"}, 403},
		{"form without Origin", "POST", "/api/key/reset", form, "rule=u&key=a", nil, 415},
		{"text/plain", "POST", "/api/key/reset?rule=u&key=a", "text/plain", "", nil, 415},
		{"multipart", "POST", "/api/key/reset?rule=u&key=a", "multipart/form-data; boundary=x", "", nil, 415},
		{"no content type", "POST", "/api/key/reset?rule=u&key=a", "", "", nil, 415},
		{"PUT as text", "PUT", "/api/rules", "text/plain", `{"rules": []}`, nil, 415},
	} {
		if code := mtlsCall(t, cl, c.method, srv.URL+c.path, c.ctype, c.body, c.header); code != c.want {
			t.Errorf("%s: %s %s: got %d, want %d", c.name, c.method, c.path, code, c.want)
		}
	}
	if len(eng.Rules()) != 1 {
		t.Fatal("a refused write replaced the rules")
	}
	if ks, _ := eng.InspectKey("u", "a"); !ks.Tracked {
		t.Fatal("a refused write reset the key")
	}
	// The same origin, and tools that send no browser header, still write.
	same := map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}
	if code := mtlsCall(t, cl, "POST", srv.URL+"/api/key/reset", "application/json; charset=utf-8", `{"rule": "u", "key": "a"}`, same); code != 200 {
		t.Errorf("same-origin JSON reset: got %d, want 200", code)
	}
	if code := mtlsCall(t, cl, "POST", srv.URL+"/api/key/reset?rule=u&key=a", "application/json", "", nil); code != 200 {
		t.Errorf("JSON reset from a tool: got %d, want 200", code)
	}
}

func mtlsCall(t *testing.T, cl *http.Client, method, u, ctype, body string, header map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}
