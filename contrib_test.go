package flowgate_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowgate/flowgate/internal/testing/modproxy"
)

const corePath = "github.com/flowgate/flowgate"

// contribModules are the modules a user adds with go get, beside the core.
var contribModules = []string{"contrib/gin", "contrib/echo"}

// contribRelease reads the contrib modules' go.mod files: none may have a
// replace (Go ignores it in a dependency, so a user's build would differ
// from ours), and all require the core at one version, the release they are
// tagged with. It returns that version.
func contribRelease(t *testing.T) string {
	t.Helper()
	version := ""
	for _, m := range contribModules {
		gomod, err := os.ReadFile(filepath.Join(m, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if modproxy.HasReplace(gomod) {
			t.Errorf("%s/go.mod has a replace directive; the go.work at the root ties the modules together", m)
		}
		v := modproxy.Required(gomod, corePath)
		switch {
		case v == "" || strings.HasPrefix(v, "v0.0.0"):
			t.Fatalf("%s/go.mod requires the core at %q, want a release version", m, v)
		case version != "" && v != version:
			t.Fatalf("%s/go.mod requires the core at %s, %s at %s", m, v, contribModules[0], version)
		}
		version = v
	}
	return version
}

// TestContribGoGet builds, in a scratch module outside the repository, a gin
// app and an echo app that go get the contrib modules, and runs them. The
// repository's modules reach the go command only through a file:// module
// proxy (the core and both contrib modules at the version the contrib
// modules require, as a release would publish them); third-party modules
// come from the module cache's download directory, then proxy.golang.org.
// Workspace mode is off, so the go.work at the root plays no part.
func TestContribGoGet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs with the go command; run without -short")
	}
	version := contribRelease(t)
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	proxy := t.TempDir()
	mods := []modproxy.Module{{Path: corePath, Version: version, Dir: root}}
	for _, m := range contribModules {
		mods = append(mods, modproxy.Module{Path: corePath + "/" + m, Version: version, Dir: filepath.Join(root, m)})
	}
	if err := modproxy.Write(proxy, mods...); err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	writeScratch(t, scratch)
	goCmd := scratchGo(t, scratch, proxy)
	goCmd("get", corePath+"/contrib/gin@"+version, corePath+"/contrib/echo@"+version)
	goCmd("build", "-o", filepath.Join(scratch, "bin")+string(filepath.Separator), "./ginapp", "./echoapp")
	for _, app := range []string{"ginapp", "echoapp"} {
		out, err := exec.Command(filepath.Join(scratch, "bin", app)).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", app, err, out)
		}
		if got, want := strings.TrimSpace(string(out)), "200 429"; got != want {
			t.Errorf("%s printed %q, want %q (one call passes, the second is refused)", app, got, want)
		}
	}
	gomod, err := os.ReadFile(filepath.Join(scratch, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{corePath, corePath + "/contrib/gin", corePath + "/contrib/echo"} {
		if got := modproxy.Required(gomod, p); got != version {
			t.Errorf("the scratch go.mod requires %s at %q, want %s", p, got, version)
		}
	}
}

// scratchGo returns a function that runs the go command in dir with the
// proxy, a module cache of its own (so the versions served here never
// enter the shared one) and no workspace.
func scratchGo(t *testing.T, dir, proxy string) func(args ...string) {
	t.Helper()
	shared, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	proxies := []string{"file://" + filepath.ToSlash(proxy)}
	if dl := filepath.Join(strings.TrimSpace(string(shared)), "cache", "download"); dirExists(dl) {
		proxies = append(proxies, "file://"+filepath.ToSlash(dl))
	}
	proxies = append(proxies, "https://proxy.golang.org")
	env := append(os.Environ(),
		"GOWORK=off",
		// -trimpath keeps this module cache's path (new on every run) out
		// of the build cache's keys, so a second run compiles nothing anew.
		"GOFLAGS=-mod=mod -modcacherw -trimpath",
		"GOPROXY="+strings.Join(proxies, ","),
		"GOMODCACHE="+filepath.Join(t.TempDir(), "mod"),
		// The served versions exist nowhere else: the checksum database
		// cannot know them. Third-party modules are still checked.
		"GONOSUMDB="+corePath,
		"GOPRIVATE=", "GONOPROXY=", "GOTOOLCHAIN=local",
	)
	return func(args ...string) {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir, cmd.Env = dir, env
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
		}
	}
}

func dirExists(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// writeScratch writes a module with two small programs: each puts the
// adapter in front of one route with a limit of one call a minute, serves
// two calls and prints their status codes.
func writeScratch(t *testing.T, dir string) {
	t.Helper()
	files := map[string]string{
		"go.mod":          "module example.com/scratch\n\ngo 1.26.0\n",
		"ginapp/main.go":  scratchGin,
		"echoapp/main.go": scratchEcho,
		"rule/rule.go":    scratchRule,
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const scratchRule = `// Package rule holds what both programs share.
package rule

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/flowgate/flowgate/flow"
)

// Engine allows one call a minute on GET /ping.
func Engine() *flow.Engine {
	eng := flow.NewEngine()
	err := eng.LoadRules([]flow.Rule{{ID: "ping", Resource: "GET /ping", Algorithm: flow.AlgoFixedWindow, Limit: 1, Window: time.Minute}})
	if err != nil {
		panic(err)
	}
	return eng
}

// Twice serves GET /ping twice and prints the two status codes.
func Twice(h http.Handler) {
	var codes []any
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/ping", nil))
		codes = append(codes, w.Code)
	}
	fmt.Println(codes...)
}
`

const scratchGin = `package main

import (
	"github.com/gin-gonic/gin"

	flowgin "github.com/flowgate/flowgate/contrib/gin"

	"example.com/scratch/rule"
)

func main() {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(flowgin.Middleware(rule.Engine()))
	r.GET("/ping", func(c *gin.Context) { c.String(200, "pong") })
	rule.Twice(r)
}
`

const scratchEcho = `package main

import (
	"github.com/labstack/echo/v4"

	flowecho "github.com/flowgate/flowgate/contrib/echo"

	"example.com/scratch/rule"
)

func main() {
	e := echo.New()
	e.Use(flowecho.Middleware(rule.Engine()))
	e.GET("/ping", func(c echo.Context) error { return c.String(200, "pong") })
	rule.Twice(e)
}
`
