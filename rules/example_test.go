package rules_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowgate/flowgate/flow"
	"github.com/flowgate/flowgate/rules"
)

func ExampleParse() {
	doc, err := rules.Parse([]byte(`{
	  "rules": [
	    {"id": "orders-per-user", "resource": "GET /orders", "level": "user",
	     "algorithm": "token_bucket", "limit": 20, "window": "1s", "burst": 40}
	  ],
	  "alerting": {"rejectionRatio": 0.3}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	r := doc.Rules()[0]
	fmt.Println(r.ID, r.Level, r.Algorithm, r.Limit, r.Window, r.MaxKeys, r.IdleTTL)
	fmt.Println("alert window:", doc.Alerting.Config.Window)

	eng := flow.NewEngine()
	fmt.Println("load:", eng.LoadRules(doc.Rules()))
	// Output:
	// orders-per-user user token_bucket 20 1s 100000 10m0s
	// alert window: 1m0s
	// load: <nil>
}

func ExampleParse_errors() {
	_, err := rules.Parse([]byte(`{"rules": [
	  {"id": "orders", "resource": "GET /orders", "algorithm": "token_bucket", "limit": 0, "window": "10x"},
	  {"id": "orders", "resource": "GET /orders", "algorithm": "fixed_window", "limit": 5, "warmup": "1s"}
	]}`))
	for _, p := range rules.Problems(err) {
		fmt.Println(p)
	}
	var fe *rules.FieldError
	if errors.As(err, &fe) {
		fmt.Printf("first: rule %d, field %s\n", fe.Index, fe.Field)
	}
	// Output:
	// rules[0] (id "orders"): window: "10x": unknown unit "x" (valid: ns, us, ms, s, m, h)
	// rules[0] (id "orders"): limit: must be > 0, not 0
	// rules[1] (id "orders"): warmup: only for warm_up and sentinel_warm_up rules
	// rules[1] (id "orders"): id: duplicate of rules[0]
	// first: rule 0, field window
}

func ExampleWatch() {
	dir, _ := os.MkdirTemp("", "flowgate-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "rules.json")
	os.WriteFile(path, []byte(`{"rules": [{"resource": "api", "algorithm": "fixed_window", "limit": 2, "window": "1h"}]}`), 0o644)

	eng := flow.NewEngine()
	w, err := rules.Watch(context.Background(), path, eng)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer w.Close()

	for range 3 {
		_, err := eng.Entry("api")
		fmt.Println(err == nil)
	}

	// A bad edit is refused and the rules in force stay.
	os.WriteFile(path, []byte(`{"rules": [{"resource": "api", "algorithm": "fixed_window", "limit": "many"}]}`), 0o644)
	err = w.Reload()
	fmt.Println(rules.Problems(err))
	st := w.Status()
	fmt.Println(len(eng.Rules()), st.OK, st.LastError != nil)
	// Output:
	// true
	// true
	// false
	// [rules[0]: limit: must be a number, got string "many"]
	// 1 false true
}

func ExampleSync() {
	dir, _ := os.MkdirTemp("", "flowgate-example")
	defer os.RemoveAll(dir)
	primary := filepath.Join(dir, "missing.json") // stands for a store that is down
	fallback := filepath.Join(dir, "rules.json")
	os.WriteFile(fallback, []byte(`{"rules": [{"id": "api", "resource": "api", "algorithm": "fixed_window", "limit": 2}]}`), 0o644)

	eng := flow.NewEngine()
	s, err := rules.Sync(context.Background(), eng, []rules.Source{
		rules.FileSource(primary), rules.FileSource(fallback),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for _, src := range s.Sources() {
		fmt.Println(filepath.Base(src.Name), src.OK, src.InForce)
	}
	fmt.Println(len(eng.Rules()))
	// Output:
	// missing.json false false
	// rules.json true true
	// 1
}

// A document with more than MaxProblems problems is refused after the
// first MaxProblems, with a last problem that says where reading stopped.
func ExampleParse_tooManyProblems() {
	doc := `{"rules": [{}` + strings.Repeat(`, {}`, 999) + `]}`
	_, err := rules.Parse([]byte(doc))
	problems := rules.Problems(err)
	fmt.Println(len(problems))
	fmt.Println(problems[0])
	fmt.Println(problems[len(problems)-1])
	// Output:
	// 101
	// rules[0]: resource: required
	// more than 100 problems (rules.MaxProblems): only the first 100 are listed; reading stopped before rules[34] (of 1000 rules)
}
