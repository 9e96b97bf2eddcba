package flowgate_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestArrowsRunOneWay keeps the module's dependency rule from regressing: a
// producer (a token server, the alerter, the CPU controller) never imports
// its consumer (the metrics exporter), so a program that uses one does not
// link Prometheus or OpenTelemetry for it; and adaptive and alerting, which
// own their settings, do not import the rules document. It asks the go command for each
// package's dependencies (go test puts GOROOT/bin first on PATH).
func TestArrowsRunOneWay(t *testing.T) {
	const (
		metricsPkg = "github.com/flowgate/flowgate/metrics"
		rulesPkg   = "github.com/flowgate/flowgate/rules"
		prom       = "github.com/prometheus/"
		otel       = "go.opentelemetry.io/"
		grpc       = "google.golang.org/grpc"
		protobuf   = "google.golang.org/protobuf"
		redis      = "github.com/redis/"
		flowPkg    = "github.com/flowgate/flowgate/flow"
		flowhttp   = "github.com/flowgate/flowgate/flow/flowhttp"
	)
	for _, tc := range []struct {
		pkg       string
		forbidden []string // these packages and every package under them
		exactly   []string // these packages alone
	}{
		// One package per transport: the Redis token server links no gRPC
		// or protobuf, the gRPC client no Redis client; neither exports.
		{"./cluster", []string{metricsPkg, prom, otel, grpc, protobuf}, nil},
		{"./cluster/remote", []string{metricsPkg, prom, otel, redis}, nil},
		// The generated wire form knows protobuf and gRPC only.
		{"./cluster/tokenpb", []string{flowPkg, metricsPkg, redis}, nil},
		// gRPC interceptors share the forwarding walk with HTTP through an
		// internal package, not by importing the HTTP middleware.
		{"./flow/flowgrpc", []string{flowhttp, metricsPkg, prom, otel}, nil},
		// The gRPC token service exports its own counters with Prometheus,
		// but reads the Redis side through no exporter of ours.
		{"./cluster/tokenrpc", []string{metricsPkg, otel}, nil},
		// The settings' owners do not know the document that carries them:
		// rules reads the sections into their types, never the other way.
		{"./alerting", []string{metricsPkg, rulesPkg, prom, otel}, nil},
		{"./adaptive", []string{metricsPkg, rulesPkg, prom, otel}, nil},
		// Parsing rules pulls no CPU sampling: the adaptive settings live
		// in a leaf (adaptive/cpuconfig) that both read.
		{"./rules", []string{metricsPkg, prom, otel, "github.com/shirou/gopsutil"}, nil},
		// The engine's rooms know nothing of the engine: the algorithms
		// and the key tables are below flow, flow imports them.
		{"./flow/internal/algo", nil, []string{flowPkg}},
		{"./flow/keytab", nil, []string{flowPkg}},
	} {
		out, err := exec.Command("go", "list", "-deps", tc.pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", tc.pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 2 {
			t.Fatalf("go list -deps %s listed %d packages; want its dependencies", tc.pkg, len(deps))
		}
		for _, d := range deps {
			for _, f := range tc.forbidden {
				if d == f || strings.HasPrefix(d, f) {
					t.Errorf("%s depends on %s (forbidden: %s)", tc.pkg, d, f)
				}
			}
			for _, f := range tc.exactly {
				if d == f {
					t.Errorf("%s depends on %s (forbidden)", tc.pkg, d)
				}
			}
		}
	}

	// rules reads the engine's problems as values (flow.RuleError with
	// errors.As), not by matching their text.
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, "./rules").CombinedOutput()
	if err != nil {
		t.Fatalf("go list ./rules: %v\n%s", err, out)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp == "regexp" {
			t.Errorf("rules imports regexp: problems from flow must be read with errors.As")
		}
	}
}
