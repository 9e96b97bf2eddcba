package testbin

import (
	"errors"
	"testing"
)

func TestLocate(t *testing.T) {
	b := Binary{Override: "X_BIN", Names: []string{"x", "/opt/x"}, Require: "X_REQUIRE", Missing: "x missing"}
	only := func(found string) func(string) (string, error) {
		return func(p string) (string, error) {
			if p == found {
				return "/bin/" + p, nil
			}
			return "", errors.New("not found")
		}
	}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		name       string
		env        map[string]string
		found      string
		wantPath   string
		wantReason string
		wantFatal  bool
	}{
		{name: "first name", found: "x", wantPath: "/bin/x"},
		{name: "later name", found: "/opt/x", wantPath: "/bin//opt/x"},
		{name: "missing skips", wantReason: "x missing"},
		{name: "missing under require fails", env: map[string]string{"X_REQUIRE": "1"}, wantReason: "x missing", wantFatal: true},
		{name: "override", env: map[string]string{"X_BIN": "y"}, found: "y", wantPath: "/bin/y"},
		{name: "override missing fails", env: map[string]string{"X_BIN": "y"}, found: "x", wantReason: "X_BIN=y: not found", wantFatal: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, reason, fatal := b.Locate(env(tc.env), only(tc.found))
			if path != tc.wantPath || reason != tc.wantReason || fatal != tc.wantFatal {
				t.Errorf("got (%q, %q, %v), want (%q, %q, %v)", path, reason, fatal, tc.wantPath, tc.wantReason, tc.wantFatal)
			}
		})
	}
}
