package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/flowgate/flowgate/rules"
)

// TestReadersRefuseOddAndHugeInput: validate, fmt and rules import read a
// FIFO, /dev/zero and an over-long standard input as the library does:
// refused at once with the reason, never read whole or waited on.
func TestReadersRefuseOddAndHugeInput(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "rules.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	huge := strings.Repeat(" ", rules.MaxDocumentBytes+1)
	for _, tc := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"validate", fifo}, "not a regular file (a FIFO)"},
		{"", []string{"fmt", "/dev/zero"}, "not a regular file (a character device)"},
		{"", []string{"rules", "import", "--from", "sentinel", fifo}, "not a regular file"},
		{huge, []string{"validate", "-"}, strconv.Itoa(rules.MaxDocumentBytes)},
	} {
		code, _, stderr := runCLI(t, tc.stdin, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, exitUsage, tc.want)
		}
	}
}
