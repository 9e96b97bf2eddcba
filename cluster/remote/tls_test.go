package remote

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/flowgate/flowgate/cluster/tokenrpc"
	"github.com/flowgate/flowgate/flow"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// allowAll is a token server that admits everything, for tests of the
// transport alone.
type allowAll struct{}

func (allowAll) Acquire(context.Context, flow.TokenRequest) (flow.TokenResult, error) {
	return flow.TokenResult{Allowed: true, Refused: -1}, nil
}
func (allowAll) Release(context.Context, flow.TokenRequest, flow.TokenResult) error { return nil }
func (allowAll) Instances() int                                                     { return 1 }

// testPKI is a throwaway CA with a server certificate for 127.0.0.1 and a
// client certificate.
type testPKI struct {
	pool           *x509.CertPool
	server, client tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "flowgate test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, usage x509.ExtKeyUsage) tls.Certificate {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "flowgate test"},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage},
			KeyUsage: x509.KeyUsageDigitalSignature, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}
	}
	p := &testPKI{pool: x509.NewCertPool(), server: leaf(2, x509.ExtKeyUsageServerAuth), client: leaf(3, x509.ExtKeyUsageClientAuth)}
	p.pool.AddCert(ca)
	return p
}

// TestRemoteTLSAndAuth: a server requiring client certificates and a
// bearer token refuses clients missing either, and serves one with both.
func TestRemoteTLSAndAuth(t *testing.T) {
	pki := newTestPKI(t)
	const token = "s3cret-token"
	rep := startRemoteReplica(t, allowAll{}, tokenrpc.WithAuthToken(token), tokenrpc.WithTLS(&tls.Config{
		Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}))
	rule := crule("r", "tls", flow.AlgoFixedWindow, 10, time.Second)
	req := flow.TokenRequest{Resource: "tls", Tokens: 1, Factor: 1, Rules: []*flow.Rule{&rule}}
	withCert := &tls.Config{RootCAs: pki.pool, Certificates: []tls.Certificate{pki.client}, MinVersion: tls.VersionTLS13}
	noCert := &tls.Config{RootCAs: pki.pool, MinVersion: tls.VersionTLS13}
	cases := []struct {
		name string
		opts []Option
		code codes.Code // codes.OK: admitted
	}{
		{"plaintext", []Option{WithToken(token)}, codes.Unavailable},
		{"tls without client cert", []Option{WithTLS(noCert), WithToken(token)}, codes.Unavailable},
		{"client cert without token", []Option{WithTLS(withCert)}, codes.Unauthenticated},
		{"client cert, wrong token", []Option{WithTLS(withCert), WithToken("s3cret-tokem")}, codes.Unauthenticated},
		{"client cert and token", []Option{WithTLS(withCert), WithToken(token)}, codes.OK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newRemote(t, []string{rep.addr}, append(tc.opts, WithTimeout(2*time.Second))...)
			res, err := c.Acquire(context.Background(), req)
			if tc.code == codes.OK {
				if err != nil || !res.Allowed {
					t.Fatalf("Acquire: %+v, %v; want admitted", res, err)
				}
				return
			}
			if err == nil || !errors.Is(err, flow.ErrTokenServerUnavailable) {
				t.Fatalf("Acquire: %+v, %v; want refused as unavailable", res, err)
			}
			// A failed handshake may be seen before the call (no replica
			// ready) or by it (Unavailable); a refused token only by it.
			if tc.code != codes.Unavailable && status.Code(err) != tc.code {
				t.Fatalf("Acquire: %v; want code %v", err, tc.code)
			}
		})
	}
	if n := rep.srv.Requests("acquire", 1); n != 1 {
		t.Fatalf("server answered OK %d times, want 1 (only the authenticated client)", n)
	}
}
