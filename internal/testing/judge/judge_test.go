package judge

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestVerdict(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		d, bound, late time.Duration
		want           string // "pass", "unjudged", "fail"
	}{
		{900 * ms, time.Second, 0, "pass"},
		{time.Second, time.Second, 0, "fail"}, // the bound is exclusive
		{1500 * ms, time.Second, 600 * ms, "unjudged"},
		{1500 * ms, time.Second, 500 * ms, "fail"}, // 1000ms of it is not lateness
		{3 * time.Second, time.Second, 100 * ms, "fail"},
	} {
		err := Verdict("recovery", tc.d, tc.bound, tc.late)
		got := "fail"
		switch {
		case err == nil:
			got = "pass"
		case errors.Is(err, ErrUnjudged):
			got = "unjudged"
		}
		if got != tc.want {
			t.Errorf("Verdict(%v, %v, late %v) = %v (%q), want %s", tc.d, tc.bound, tc.late, got, err, tc.want)
		}
	}
}

// fakeT records what Retry tells a test.
type fakeT struct {
	logs  []string
	fatal string
}

func (f *fakeT) Helper()                   {}
func (f *fakeT) Logf(s string, a ...any)   { f.logs = append(f.logs, fmt.Sprintf(s, a...)) }
func (f *fakeT) Fatalf(s string, a ...any) { f.fatal = fmt.Sprintf(s, a...) }

func TestRetry(t *testing.T) {
	unjudged := fmt.Errorf("slow: %w", ErrUnjudged)
	t.Run("an unjudged try is tried again until one passes", func(t *testing.T) {
		var f fakeT
		calls := 0
		Retry(&f, 3, func(int) error {
			calls++
			if calls < 3 {
				return unjudged
			}
			return nil
		})
		if calls != 3 || f.fatal != "" || len(f.logs) != 2 {
			t.Errorf("calls %d, fatal %q, logs %q", calls, f.fatal, f.logs)
		}
	})
	t.Run("a judged failure stops at once", func(t *testing.T) {
		var f fakeT
		calls := 0
		Retry(&f, 5, func(int) error { calls++; return errors.New("3s, want < 1s") })
		if calls != 1 || !strings.Contains(f.fatal, "3s, want < 1s") {
			t.Errorf("calls %d, fatal %q", calls, f.fatal)
		}
	})
	t.Run("no judged try fails, never passes", func(t *testing.T) {
		var f fakeT
		calls := 0
		Retry(&f, 2, func(int) error { calls++; return unjudged })
		if calls != 2 || !strings.Contains(f.fatal, "no attempt of 2") {
			t.Errorf("calls %d, fatal %q", calls, f.fatal)
		}
	})
}
