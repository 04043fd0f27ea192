package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestProxyTimeoutFlags: the nginx timeouts are flags, refused at 0 with
// exit 2, and exported by --print-nginx and nginx-config.
func TestProxyTimeoutFlags(t *testing.T) {
	for _, flag := range []string{"--send-timeout", "--client-body-timeout", "--client-header-timeout"} {
		code, _, stderr := runCLI(t, t.Context(), "proxy", "--upstream", "http://127.0.0.1:1", flag, "0s")
		if code != 2 || !strings.Contains(stderr, flag+" 0s: want a duration above 0") {
			t.Errorf("%s 0s: exit %d, stderr %q; want 2 and the flag named", flag, code, stderr)
		}
	}
	runWant(t, []string{"proxy", "--upstream", "http://127.0.0.1:9000", "--print-nginx",
		"--read-timeout", "2s", "--send-timeout", "3s", "--client-body-timeout", "4s", "--client-header-timeout", "5s"},
		"proxy_read_timeout 2s;", "proxy_send_timeout 3s;", "client_body_timeout 4s;", "client_header_timeout 5s;")

	dir := t.TempDir()
	file := filepath.Join(dir, "s.yaml")
	sc := `name: t
duration: 1m
backend: {workers: 1, routes: [{name: p, path: /, service: 10ms}]}
proxy: {send_timeout: 7s, client_body_timeout: 8s, client_header_timeout: 9s}
tenants: [{group: g, host: h.example.com, load: {rate: 1/s}}]
`
	if err := os.WriteFile(file, []byte(sc), 0o644); err != nil {
		t.Fatal(err)
	}
	runWant(t, []string{"nginx-config", file, "--time-scale", "0.5"},
		"proxy_send_timeout 3500ms;", "client_body_timeout 4s;", "client_header_timeout 4500ms;")
}
