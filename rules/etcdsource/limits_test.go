package etcdsource

import (
	"strings"
	"testing"
	"time"

	"github.com/flowgate/flowgate/internal/testing/etcdtest"
	"github.com/flowgate/flowgate/rules"
)

// TestHugeBadDocumentRefusedCheaply: a megabyte of bad rules put in etcd
// is refused with rules.MaxProblems problems and a last one saying there
// are more (not a million); the last good rules stay, and a good document
// after it is loaded.
func TestHugeBadDocumentRefusedCheaply(t *testing.T) {
	srv := etcdtest.Start(t)
	c := srv.Client()
	put(t, c, limitDoc(3))
	r := startRig(t, New(srv.Client(), key, watchOnly...))

	put(t, c, `{"rules": [{}`+strings.Repeat(`,{}`, (1<<20)/3)+`]}`)
	start := time.Now()
	ev := r.waitFor("the huge document refused", func(ev rules.Event) bool { return ev.Err != nil })
	ps := rules.Problems(ev.Err)
	if len(ps) != rules.MaxProblems+1 || !strings.Contains(ps[rules.MaxProblems].Error(), "more than") {
		t.Errorf("%d problems, want %d and a last one saying there are more", len(ps), rules.MaxProblems)
	}
	if got := r.limit(); got != 3 {
		t.Errorf("after a refused document: limit %d, want the last good 3", got)
	}
	t.Logf("refused %v after the put", time.Since(start))

	put(t, c, limitDoc(5))
	r.waitLimit(5)
}
