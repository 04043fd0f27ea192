package scenarios

import (
	"errors"
	"testing"
	"time"

	"stampede/workerpool"
)

// TestParseBackend holds a backend made of overrides alone to the file's
// rules: the defaults of a file's backend, the pool's bounds, and errors
// that name the override.
func TestParseBackend(t *testing.T) {
	b, err := ParseBackend("flags", nil)
	if err != nil {
		t.Fatalf("ParseBackend without overrides: %v", err)
	}
	want := workerpool.Config{Workers: workerpool.DefaultWorkers, Backlog: workerpool.DefaultBacklog, Threads: 1, Boot: workerpool.DefaultBoot}
	if got := b.PoolConfig(); got != want || len(b.Routes) != 0 {
		t.Errorf("defaults: pool %+v routes %v, want %+v and no routes", got, b.Routes, want)
	}
	b, err = ParseBackend("flags", []string{"backend.workers=8", "backend.backlog=0", "backend.timeout=2m", "backend.on_client_abort=cancel"})
	want = workerpool.Config{Workers: 8, Backlog: -1, Timeout: 2 * time.Minute, Threads: 1, Boot: workerpool.DefaultBoot, OnClientAbort: workerpool.Cancel}
	if got := b.PoolConfig(); err != nil || got != want {
		t.Errorf("overrides: pool %+v, %v; want %+v", got, err, want)
	}
	_, err = ParseBackend("flags", []string{"backend.workers=70000", "backend.threads=0"})
	var e *Error
	if !errors.As(err, &e) || len(e.All()) != 2 {
		t.Fatalf("two bad overrides: error %v, want an *Error with two mistakes", err)
	}
	for i, want := range []struct{ set, path, msg string }{
		{"backend.threads=0", "backend.threads", "0 is below 1 (want e.g. 4)"},
		{"backend.workers=70000", "backend.workers", "70000 is over 65536 (want e.g. 8)"},
	} {
		if got := e.All()[i]; got.Set != want.set || got.Path != want.path || got.Msg != want.msg {
			t.Errorf("mistake %d: --set %s: %s: %s, want --set %s: %s: %s", i, got.Set, got.Path, got.Msg, want.set, want.path, want.msg)
		}
	}
}
