package rules

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// manyRules is a document of rules repeated until it is size bytes long.
func manyRules(size int, rule string) []byte {
	var b bytes.Buffer
	b.Grow(size)
	b.WriteString(`{"rules": [` + rule)
	for b.Len()+len(rule)+3 < size {
		b.WriteString("," + rule)
	}
	b.WriteString("]}")
	return b.Bytes()
}

// parseCost parses doc once and returns the error, the time taken and the
// bytes allocated meanwhile (runtime.MemStats.TotalAlloc: only this
// goroutine allocates in the test, which does not run in parallel).
func parseCost(doc []byte) (time.Duration, uint64, error) {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	_, err := Parse(doc)
	took := time.Since(start)
	runtime.ReadMemStats(&m1)
	return took, m1.TotalAlloc - m0.TotalAlloc, err
}

// TestParseRefusesHugeInvalidDocumentsCheaply: a document of hundreds of
// thousands of bad rules is refused with MaxProblems problems and one that
// says where reading stopped, allocating less than the document's own
// size, in a time of the order of json.Valid's over the same bytes.
//
// The time bound is relative, so that a busy machine slows both sides: the
// refusal may take 25 times json.Valid's best of three (it runs json.Valid
// itself, then counts the unread rules). Memory does not depend on load.
func TestParseRefusesHugeInvalidDocumentsCheaply(t *testing.T) {
	for _, tc := range []struct {
		name, rule string
		size       int
	}{
		{"1MB of {}", `{}`, 1 << 20},
		{"4MB of {}", `{}`, MaxDocumentBytes},
		{"4MB of rules the engine refuses", `{"resource": "a", "algorithm": "fixed_window", "limit": 0}`, MaxDocumentBytes},
		{"4MB of one id", `{"id": "a", "resource": "a", "algorithm": "fixed_window", "limit": 1}`, MaxDocumentBytes},
		{"4MB of numbers", `0`, MaxDocumentBytes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := manyRules(tc.size, tc.rule)
			valid := time.Duration(1 << 62)
			for range 3 {
				start := time.Now()
				json.Valid(doc)
				valid = min(valid, time.Since(start))
			}
			var took time.Duration
			for try := range 3 {
				d, alloc, err := parseCost(doc)
				checkCapped(t, err)
				// docs/operations.md: 300–365 KB whatever the size; held
				// to about twice that.
				if alloc >= 720<<10 {
					t.Fatalf("refusing %d bytes allocated %d bytes, want under 720 KiB", len(doc), alloc)
				}
				took = d
				if took <= 25*valid {
					t.Logf("%d bytes refused in %v (json.Valid %v), %d bytes allocated (try %d)", len(doc), took, valid, alloc, try+1)
					return
				}
			}
			t.Errorf("refusing %d bytes took %v, want at most 25 x json.Valid's %v", len(doc), took, valid)
		})
	}
}

// checkCapped checks that err lists MaxProblems problems and a last one
// saying that there were more.
func checkCapped(t *testing.T, err error) {
	t.Helper()
	ps := Problems(err)
	if len(ps) != MaxProblems+1 {
		t.Fatalf("%d problems listed, want %d and a last one saying there are more", len(ps), MaxProblems)
	}
	last := ps[len(ps)-1].Error()
	if want := "more than " + strconv.Itoa(MaxProblems) + " problems"; !strings.Contains(last, want) {
		t.Errorf("last problem %q does not say %q", last, want)
	}
}

func TestParseStopsAtMaxProblemsAndSaysWhere(t *testing.T) {
	doc := manyRules(10_000, `{}`)
	_, err := Parse(doc)
	checkCapped(t, err)
	ps := Problems(err)
	if got := ps[0].Error(); got != "rules[0]: resource: required" {
		t.Errorf("first problem %q, want rules[0]: resource: required", got)
	}
	n := strings.Count(string(doc), "{}")
	last := ps[len(ps)-1].Error()
	if !strings.Contains(last, "reading stopped before rules[") || !strings.Contains(last, "(of "+strconv.Itoa(n)+" rules)") {
		t.Errorf("last problem %q does not say where reading stopped among %d rules", last, n)
	}
	// Exactly MaxProblems problems: all listed, no note.
	var b strings.Builder
	b.WriteString(`{"rules": [`)
	for i := range MaxProblems {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"resource": "r", "algorithm": "fixed_window"}`) // limit: required
	}
	b.WriteString("]}")
	_, err = Parse([]byte(b.String()))
	if got := len(Problems(err)); got != MaxProblems {
		t.Errorf("a document with %d problems lists %d", MaxProblems, got)
	}
}

func TestParseRefusesOversizedDocument(t *testing.T) {
	// A good document after enough spaces to be one byte too long.
	good := limitDoc(3)
	doc := append(bytes.Repeat([]byte(" "), MaxDocumentBytes+1-len(good)), good...)
	_, err := Parse(doc)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("Parse of %d bytes: %v, want ErrTooLarge", len(doc), err)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(MaxDocumentBytes)) {
		t.Errorf("error %q does not give the bound %d", err, MaxDocumentBytes)
	}
	if _, err := Parse(doc[1:]); err != nil {
		t.Errorf("the same document of MaxDocumentBytes: %v", err)
	}
}

// readWithin runs ReadFile(path) and fails the test if it does not return
// within a minute: ReadFile must never block.
func readWithin(t *testing.T, path string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := ReadFile(path)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("ReadFile(%s) blocked", path)
		return nil
	}
}

func TestReadFileOnlyRegularFilesUpToTheLimit(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 1<<40); err != nil { // sparse: nothing written
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.json")
	if err := os.WriteFile(good, []byte(limitDoc(3)), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]error{fifo: ErrNotRegular, zero: ErrNotRegular, dir: ErrNotRegular, huge: ErrTooLarge} {
		err := readWithin(t, path)
		if !errors.Is(err, want) || !strings.Contains(err.Error(), path) {
			t.Errorf("ReadFile(%s) = %v, want %v naming the path", path, err, want)
		}
	}
	if _, err := LoadFile(zero); !errors.Is(err, ErrNotRegular) {
		t.Errorf("LoadFile(/dev/zero link) = %v, want ErrNotRegular", err)
	}
	if data, err := ReadFile(good); err != nil || string(data) != limitDoc(3) {
		t.Errorf("ReadFile(good) = %q, %v", data, err)
	}
	if _, err := ReadDocument(bytes.NewReader(make([]byte, MaxDocumentBytes+1))); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadDocument(MaxDocumentBytes+1) = %v, want ErrTooLarge", err)
	}
	if data, err := ReadDocument(bytes.NewReader(make([]byte, MaxDocumentBytes))); err != nil || len(data) != MaxDocumentBytes {
		t.Errorf("ReadDocument(MaxDocumentBytes) = %d bytes, %v", len(data), err)
	}
}
