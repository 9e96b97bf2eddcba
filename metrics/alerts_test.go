package metrics

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const (
	rulesPath     = "alerts/flowgate.rules.yml"
	rulesTestPath = "alerts/flowgate.rules.test.yml"
)

type alertRule struct {
	expr, forDur string
}

var alertRe = regexp.MustCompile(`^(\s*)- alert:\s*(\S+)\s*$`)

// alertRules reads the alert rules' names, expressions and for: durations.
// It understands the layout of our file (expr inline or as a block scalar),
// not YAML at large; promtool checks the file itself.
func alertRules(t *testing.T) map[string]alertRule {
	t.Helper()
	lines := strings.Split(readFile(t, rulesPath), "\n")
	rules := map[string]alertRule{}
	var name string
	for i := 0; i < len(lines); i++ {
		if m := alertRe.FindStringSubmatch(lines[i]); m != nil {
			name = m[2]
			rules[name] = alertRule{}
			continue
		}
		key, val, ok := strings.Cut(strings.TrimSpace(lines[i]), ":")
		if !ok || name == "" {
			continue
		}
		r := rules[name]
		switch key {
		case "for":
			r.forDur = strings.TrimSpace(val)
		case "expr":
			val = strings.TrimSpace(val)
			if val == "|" || val == ">" || val == "|-" || val == ">-" {
				indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
				var block []string
				for i+1 < len(lines) {
					next := lines[i+1]
					if strings.TrimSpace(next) != "" && len(next)-len(strings.TrimLeft(next, " ")) <= indent {
						break
					}
					block = append(block, strings.TrimSpace(next))
					i++
				}
				val = strings.Join(block, " ")
			}
			r.expr = val
		}
		rules[name] = r
	}
	return rules
}

func TestAlertRulesUseExportedMetrics(t *testing.T) {
	exp := exported(t)
	rules := alertRules(t)
	for _, name := range []string{"FlowgateHighRejectionRatio", "FlowgateClusterFallbackActive", "FlowgateRulesReloadFailing",
		"FlowgateCircuitBreakerOpen"} {
		r, ok := rules[name]
		if !ok {
			t.Errorf("%s: missing", name)
			continue
		}
		if r.forDur == "" {
			t.Errorf("%s: no for: duration", name)
		}
	}
	for name, r := range rules {
		if r.expr == "" {
			t.Errorf("%s: no expr", name)
		}
		for _, prob := range checkQuery(exp, r.expr) {
			t.Errorf("%s: %s\n\t%s", name, prob, r.expr)
		}
	}
	// Whatever the parser above missed: every flowgate_ name anywhere in
	// the file, comments included, is one we export.
	for _, n := range metricRe.FindAllString(readFile(t, rulesPath), -1) {
		if _, ok := exp[n]; !ok {
			t.Errorf("%s mentions %s, which is not exported", rulesPath, n)
		}
	}
}

// promtool returns the path of promtool, or skips the test (fails it under
// FLOWGATE_REQUIRE_PROMETHEUS=1, as make test sets).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		const msg = "promtool not on PATH (Debian package prometheus; make deps installs it): skipping the rule checks"
		if os.Getenv("FLOWGATE_REQUIRE_PROMETHEUS") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

func runPromtool(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func TestAlertRulesPromtoolCheck(t *testing.T) {
	runPromtool(t, "alerts", "check", "rules", filepath.Base(rulesPath))
}

func TestAlertRulesPromtoolUnitTests(t *testing.T) {
	runPromtool(t, "alerts", "test", "rules", filepath.Base(rulesTestPath))
}

// TestDashboardQueriesParse has promtool parse every panel query, with the
// Grafana variables replaced, as recording rules.
func TestDashboardQueriesParse(t *testing.T) {
	promtool(t)
	repl := strings.NewReplacer("$__rate_interval", "5m", "$job", ".*", "$resource", ".*")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range flatPanels(loadDashboard(t).Panels) {
		for _, tg := range p.Targets {
			n++
			fmt.Fprintf(&b, "      - record: dashboard:panel%d:%s\n        expr: %s\n", p.ID, tg.RefID, strconv.Quote(repl.Replace(tg.Expr)))
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dashboard.rules.yml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	runPromtool(t, dir, "check", "rules", "dashboard.rules.yml")
	if n == 0 {
		t.Fatal("no queries")
	}
}
