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
		res, err := cl.Post(srv.URL+"/api/key/reset?rule=u&key=a", "text/plain", nil)
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
