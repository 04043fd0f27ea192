package main

import (
	"path/filepath"
	"strings"
	"testing"

	"stampede/scenarios"
)

func TestValidate(t *testing.T) {
	bad := writeScenario(t, "name: bad\nduration: 1m\nbackend:\n  wokers: 2\n")
	cases := []struct {
		name      string
		args      []string
		code      int
		stdout    []string // parts of stdout
		stderr    []string // parts of stderr
		roundTrip bool
	}{
		{"good file", []string{"validate", "../../scenarios/stock-balance.yaml"}, 0,
			[]string{"name: stock-balance\n", "  workers: 8\n", "  limit_conn: {key: $host, per_key: 4, zone: 10m, status: 503, dry_run: false}\n", "      rate: 0.2/s\n"}, nil, true},
		{"overrides", []string{"validate", "../../scenarios/stock-balance.yaml", "--set", "backend.workers=16", "--set", "proxy.limit_conn.per_key=off"}, 0,
			[]string{"# --set backend.workers=16\n", "# --set proxy.limit_conn.per_key=off\n", "  workers: 16\n"}, nil, true},
		{"bad file", []string{"validate", bad}, 2, nil,
			[]string{"stampede: scenario " + bad + `:4:3: backend: unknown key "wokers" (did you mean "workers"?)`}, false},
		{"bad override", []string{"validate", "../../scenarios/stock-balance.yaml", "--set", "proxy.limit_conn.per_key=0"}, 2, nil,
			[]string{"--set proxy.limit_conn.per_key=0: proxy.limit_conn.per_key: 0 is below 1"}, false},
		{"missing file", []string{"validate", filepath.Join(t.TempDir(), "none.yaml")}, 2, nil, []string{"none.yaml", "no such file"}, false},
		{"no file", []string{"validate"}, 2, nil, []string{"accepts 1 arg"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, t.Context(), c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, c.code, stdout, stderr)
			}
			for _, s := range c.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range c.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			if c.code != 0 && stdout != "" {
				t.Errorf("a failed validate printed to stdout:\n%s", stdout)
			}
			if c.roundTrip {
				if stderr != "" {
					t.Errorf("stderr = %q, want nothing", stderr)
				}
				if _, err := scenarios.Parse("printed.yaml", []byte(stdout)); err != nil {
					t.Errorf("the printed scenario does not load: %v", err)
				}
			}
		})
	}
}

func TestValidateReference(t *testing.T) {
	runWant(t, []string{"validate", "--reference"}, "KEY", "proxy.limit_conn.per_key", "tenants[].load.rate", "recommend.prefer", "2048")
}
