package rules

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/flowgate/flowgate/flow"
)

// FieldError is one problem in a rules document. Parse joins every problem it
// finds with errors.Join; errors.As finds the first one, and Problems lists
// them all.
type FieldError struct {
	// Index is the rule's position in "rules", or -1 for a problem outside a rule.
	Index int
	// ID is the rule's id, when it has one.
	ID string
	// Field is the path to the field inside the rule or document, such as
	// "window", "cluster.fallback" or "alerting.window"; empty for the whole
	// rule or document.
	Field string
	// Line and Column locate a JSON syntax error (1-based); 0 otherwise.
	Line, Column int
	// Msg says what is wrong.
	Msg string

	cause error // what Msg was made from, if an error (Unwrap)
}

// Unwrap returns the error the problem was made from, if any: ErrTooLarge
// for a document over MaxDocumentBytes.
func (e *FieldError) Unwrap() error { return e.cause }

// Path is where the problem is, as printed before the message: for example
// `rules[3] (id "orders"): window` or `alerting.window`.
func (e *FieldError) Path() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d, column %d", e.Line, e.Column)
	}
	if e.Index >= 0 {
		fmt.Fprintf(&b, "rules[%d]", e.Index)
		if e.ID != "" {
			fmt.Fprintf(&b, " (id %q)", e.ID)
		}
		if e.Field != "" {
			b.WriteString(": ")
		}
	}
	b.WriteString(e.Field)
	return b.String()
}

// Error returns the path and the message, such as
// `rules[0] (id "orders"): limit: must be > 0, not 0`, or the message alone
// when there is no path.
func (e *FieldError) Error() string {
	if p := e.Path(); p != "" {
		return p + ": " + e.Msg
	}
	return e.Msg
}

// Problems lists the individual problems in an error returned by Parse,
// LoadFile, Watcher.Reload or flow.ValidateRules, in order, without the
// wrapping (such as the file name) around them. An error with no
// FieldError or joined list inside is returned as it is.
func Problems(err error) []error {
	if err == nil {
		return nil
	}
	for e := err; e != nil; {
		switch x := e.(type) {
		case interface{ Unwrap() []error }:
			var out []error
			for _, inner := range x.Unwrap() {
				out = append(out, Problems(inner)...)
			}
			return out
		case *FieldError:
			return []error{x}
		case interface{ Unwrap() error }:
			e = x.Unwrap()
		default:
			e = nil
		}
	}
	return []error{err}
}

// problems collects the problems of one document, the first MaxProblems
// of them: past those, over is set and readers stop (see full).
type problems struct {
	list []error
	over bool // a problem past MaxProblems was found and left out
	// stoppedAt is the index of the first rule not read because of the
	// cap, and rules how many the document has; stoppedAt is -1 when
	// every rule was read.
	stoppedAt, rules int
}

func newProblems() *problems { return &problems{stoppedAt: -1} }

func (p *problems) add(e *FieldError) {
	if len(p.list) < MaxProblems {
		p.list = append(p.list, e)
		return
	}
	p.over = true
}

// full reports whether one more problem would be left out, so a reader
// can skip building its message.
func (p *problems) full() bool {
	if len(p.list) >= MaxProblems {
		p.over = true // the caller has one more
		return true
	}
	return false
}

// err joins the problems in reading order: document-level first, then each
// rule by index (the engine's checks after the file's), then the sections.
func (p *problems) err() error {
	rank := func(e error) int {
		fe, ok := e.(*FieldError)
		switch {
		case !ok:
			return -1
		case fe.Index >= 0:
			return fe.Index
		case strings.HasPrefix(fe.Field, "adaptive") || strings.HasPrefix(fe.Field, "alerting"):
			return math.MaxInt
		}
		return -1
	}
	sort.SliceStable(p.list, func(i, j int) bool { return rank(p.list[i]) < rank(p.list[j]) })
	if p.over {
		return errors.Join(append(p.list, p.tooMany())...)
	}
	return errors.Join(p.list...)
}

// tooMany is the last problem of a document with more than MaxProblems:
// that the list is cut, and where reading stopped.
func (p *problems) tooMany() *FieldError {
	msg := fmt.Sprintf("more than %d problems (rules.MaxProblems): only the first %d are listed", MaxProblems, MaxProblems)
	if p.stoppedAt >= 0 {
		msg += fmt.Sprintf("; reading stopped before rules[%d] (of %d rules)", p.stoppedAt, p.rules)
	}
	return &FieldError{Index: -1, Msg: msg}
}

// fromFlow turns one problem reported by flow.ValidateRules (a
// *flow.RuleError) into a FieldError, so that the engine's own checks and
// the file's read the same way. Any other error is kept whole.
func fromFlow(err error) *FieldError {
	var re *flow.RuleError
	if !errors.As(err, &re) {
		return &FieldError{Index: -1, Msg: err.Error()}
	}
	return &FieldError{Index: re.Index, ID: re.ID, Field: re.Field, Msg: re.Msg}
}
