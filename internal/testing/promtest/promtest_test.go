package promtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A real prometheus scrapes a tiny /metrics, evaluates a recording rule and
// an alert, and answers queries; a bad expression is an error.
func TestStartScrapeQuery(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "# TYPE up_test gauge\nup_test 7")
	})}
	go srv.Serve(ln)
	defer srv.Close()

	p := Start(t, Config{
		Targets:  []string{ln.Addr().String()},
		Interval: 200 * time.Millisecond,
		RuleFiles: map[string]string{"r.yml": `groups:
  - name: g
    rules:
      - alert: Seven
        expr: up_test == 7
`},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []Sample
	for ctx.Err() == nil && len(got) == 0 {
		got, err = p.Query(ctx, `up_test{job="flowgate"}`)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // waiting for an external scrape
	}
	if len(got) != 1 || got[0].Value != 7 {
		t.Fatalf("up_test = %+v, want one sample 7", got)
	}
	if _, err := p.Query(ctx, `rate(up_test[`); err == nil || !strings.Contains(err.Error(), "bad_data") {
		t.Errorf("a syntax error: got %v, want a bad_data error", err)
	}
	for ctx.Err() == nil {
		as, err := p.Alerts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(as) == 1 && as[0].State == "firing" && as[0].Labels["alertname"] == "Seven" {
			return
		}
		time.Sleep(100 * time.Millisecond) // waiting for an external evaluation
	}
	t.Fatalf("alert Seven never fired; log:\n%s", p.Log())
}
