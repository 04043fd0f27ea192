package scenarios

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestReferenceListsEveryKey holds Reference against the keys the decoder
// reads: each key of each mapping has its line, and no line names a key the
// decoder does not read.
func TestReferenceListsEveryKey(t *testing.T) {
	var want []string
	add := func(prefix string, keys []string, skip ...string) {
		for _, k := range keys {
			if !slices.Contains(skip, k) {
				want = append(want, prefix+k)
			}
		}
	}
	add("", topKeys, "backend", "proxy", "tenants", "slo", "sweep", "recommend")
	add("backend.", backendKeys, "routes")
	add("backend.routes[].", routeKeys)
	add("proxy.", proxyKeys, "limit_conn", "limit_req", "locations")
	add("proxy.locations[].", locKeys)
	add("proxy.limit_conn.", connKeys)
	add("proxy.limit_req.", reqKeys)
	add("tenants[].", tenantKeys, "load")
	add("tenants[].load.", loadKeys, "stages")
	add("tenants[].load.stages[].", stageKeys)
	add("sweep[].", axisKeys)
	add("recommend.", recommendKeys)
	want = append(want, "slo.<GROUP>")
	var got []string
	for _, k := range Reference {
		got = append(got, k.Path)
		if k.Type == "" || k.Example == "" {
			t.Errorf("reference %s: type %q, example %q; want both", k.Path, k.Type, k.Example)
		}
	}
	for _, k := range want {
		if !slices.Contains(got, k) {
			t.Errorf("the decoder reads %s but Reference has no line for it: add one to scenarios/reference.go", k)
		}
	}
	for _, k := range got {
		if !slices.Contains(want, k) {
			t.Errorf("Reference lists %s, which the decoder does not read", k)
		}
	}
	var buf bytes.Buffer
	if err := WriteReference(&buf); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != len(Reference)+1 {
		t.Errorf("the reference has %d lines, want %d", n, len(Reference)+1)
	}
}
