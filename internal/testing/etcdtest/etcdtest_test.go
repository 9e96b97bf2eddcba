package etcdtest

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestLocate(t *testing.T) {
	missing := func(string) (string, error) { return "", errors.New("not found") }
	found := func(p string) (string, error) { return "/x/" + p, nil }
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	if p, _, _ := etcdServer.Locate(env(nil), found); p != "/x/etcd" {
		t.Errorf("PATH: got %q, want /x/etcd", p)
	}
	if _, reason, fatal := etcdServer.Locate(env(nil), missing); fatal || reason != missingMessage {
		t.Errorf("missing: got %q fatal=%v, want skip with %q", reason, fatal, missingMessage)
	}
	if _, _, fatal := etcdServer.Locate(env(map[string]string{"FLOWGATE_REQUIRE_ETCD": "1"}), missing); !fatal {
		t.Error("missing under FLOWGATE_REQUIRE_ETCD=1: got skip, want failure")
	}
	if _, _, fatal := etcdServer.Locate(env(map[string]string{"ETCD_SERVER": "/nope"}), missing); !fatal {
		t.Error("ETCD_SERVER naming a missing file: got skip, want failure")
	}
}

// TestKillRestartKeepsData: a value written before a crash is there after
// Restart, at the same endpoint.
func TestKillRestartKeepsData(t *testing.T) {
	s := Start(t)
	c := s.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	short, cancelShort := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err := c.Get(short, "k")
	cancelShort()
	if err == nil {
		t.Fatal("Get after Kill succeeded; want an error")
	}
	s.Restart()
	resp, err := c.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v1" {
		t.Fatalf("after restart got %v, want k=v1", resp.Kvs)
	}
}
