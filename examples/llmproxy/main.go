// Command llmproxy is an LLM gateway in miniature: it limits each tenant to
// a number of model tokens per minute, though what a request costs is known
// only once the model answered. Each request reserves an estimate from its
// prompt's length at admission, and settles the tokens the upstream reports
// using (its X-Usage-Tokens header) when it ends: a tenant that used more
// than estimated is in debt, and its next requests wait until it is paid.
//
//	go run ./examples/llmproxy
//
// It starts a fake model and the proxy on loopback, sends a heavy tenant's
// and a light tenant's traffic through it, prints what each was admitted
// and what it really used, and exits non-zero if the limit did not hold.
package main

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/flow/flowhttp"
)

// The per-tenant budget: tokens a minute, and the most one settlement may
// leave owed.
const (
	tokensPerMinute = 2000
	maxDebt         = 1000
)

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "llmproxy:", err)
		os.Exit(1)
	}
}

// model is the fake upstream: it "answers" a prompt and reports the tokens
// it used, the prompt's and the completion's, in X-Usage-Tokens.
func model() http.Handler {
	rng := rand.New(rand.NewPCG(1, 1))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prompt, _ := io.ReadAll(r.Body)
		used := len(prompt)/4 + 50 + rng.IntN(350) // the completion's length is up to the model
		w.Header().Set("X-Usage-Tokens", strconv.Itoa(used))
		fmt.Fprintf(w, "(%d tokens of answer)\n", used)
	})
}

// estimate guesses a request's tokens before it runs: the prompt's, about
// four characters each, and a typical completion.
func estimate(r *http.Request) int { return int(r.ContentLength)/4 + 100 }

func run(out io.Writer) error {
	upstream := httptest.NewServer(model())
	defer upstream.Close()
	target, _ := url.Parse(upstream.URL)

	eng := flow.NewEngine()
	if err := eng.LoadRules([]flow.Rule{{
		ID: "tokens-per-tenant", Resource: "POST /v1/chat", Level: flow.LevelUser,
		Algorithm: flow.AlgoTokenBucket, Limit: tokensPerMinute, Window: time.Minute, MaxDebt: maxDebt,
	}}); err != nil {
		return err
	}
	mw := flowhttp.Middleware(eng,
		flowhttp.WithUser(func(r *http.Request) string { return r.Header.Get("X-Tenant") }),
		flowhttp.WithCost(estimate),
		flowhttp.WithCostHeader("X-Usage-Tokens"),
		flowhttp.WithQuotaHeaders(true),
	)
	mux := http.NewServeMux()
	mux.Handle("POST /v1/chat", mw(httputil.NewSingleHostReverseProxy(target)))
	proxy := httptest.NewServer(mux)
	defer proxy.Close()

	fmt.Fprintf(out, "proxy %s -> model %s; each tenant: %d tokens a minute, debt at most %d\n", proxy.URL, upstream.URL, tokensPerMinute, maxDebt)
	start := time.Now()
	heavy := send(proxy.URL, "acme", 40)
	light := send(proxy.URL, "tiny", 3)
	elapsed := time.Since(start)
	for _, t := range []tenant{heavy, light} {
		fmt.Fprintf(out, "%-5s %2d requests: %2d admitted, %2d refused (429); estimated %5d tokens, used %5d\n",
			t.name, t.sent, t.admitted, t.refused, t.estimated, t.used)
	}
	for _, r := range eng.Snapshot().Rules {
		fmt.Fprintf(out, "rule %s: %d settled, %d charged beyond the estimates, %d refunded, %d forgiven\n",
			r.ID, r.Cost.Settled, r.Cost.Charged, r.Cost.Refunded, r.Cost.Forgave)
	}
	// What the limit promises: a tenant's tokens over the run stay within
	// the bucket (one minute's worth), what refilled meanwhile, and maxDebt.
	bound := tokensPerMinute + maxDebt + int(float64(tokensPerMinute)*elapsed.Minutes()) + 1
	switch {
	case heavy.used > bound:
		return fmt.Errorf("%s used %d tokens, more than the limit allows (%d)", heavy.name, heavy.used, bound)
	case heavy.refused == 0:
		return fmt.Errorf("%s was never refused: the limit did not act", heavy.name)
	case light.admitted != light.sent:
		return fmt.Errorf("%s was refused: one tenant's debt must not cost another", light.name)
	}
	fmt.Fprintf(out, "ok: %s held to %d tokens (bound %d) while %s went through\n", heavy.name, heavy.used, bound, light.name)
	return nil
}

// tenant is what one tenant's requests got.
type tenant struct {
	name                    string
	sent, admitted, refused int
	estimated, used         int
}

// send posts n prompts of a few hundred characters as tenant name.
func send(base, name string, n int) tenant {
	t := tenant{name: name, sent: n}
	for i := range n {
		prompt := strings.Repeat("explain rate limiting once more ", 10+i%20)
		req, _ := http.NewRequest("POST", base+"/v1/chat", strings.NewReader(prompt))
		req.Header.Set("X-Tenant", name)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.refused++
			continue
		}
		t.admitted++
		t.estimated += len(prompt)/4 + 100
		used, _ := strconv.Atoi(res.Header.Get("X-Usage-Tokens"))
		t.used += used
	}
	return t
}
