package scenarios

import (
	"strings"
	"testing"
)

func TestBounds(t *testing.T) {
	const backend = "backend: {workers: 4, routes: [{name: r, path: /, service: 10ms}]}\n"
	// want is in the error, with its line:col; "" for none.
	for _, tt := range []struct{ name, src, want string }{
		{"the incident", "name: s\nduration: 10m\n" + backend + "tenants:\n  - {group: other, count: 249, host: \"s{i}.x\", load: {rate: 1/s}}\n  - {group: x, host: x.x, load: {model: closed, users: 8, think: 0s}}\n", ""},
		{"1e10 users", "name: s\nduration: 10m\n" + backend + "tenants:\n  - {group: x, count: 100000, host: \"s{i}.x\", load: {model: closed, users: 100000, think: 5s}}\n", "s.yaml:5:76: tenants[0].load.users: 10000000000 closed-model users in all"},
		{"a billion requests a second", "name: s\nduration: 1m\n" + backend + "tenants:\n  - {group: x, host: x.x, load: {rate: 1000000000/s}}\n", "tenants[0].load: "},
		{"a million hours", "name: s\nduration: 1000000h\n" + backend + "tenants:\n  - {group: x, host: x.x, load: {rate: 1/s}}\n", "s.yaml:2:11: duration: 1000000h is longer than 720h"},
		{"time_scale 1e-300", "name: s\nduration: 1m\ntime_scale: 1e-300\n" + backend + "tenants:\n  - {group: x, host: x.x, load: {rate: 1/s}}\n", "s.yaml:3:13: time_scale: 1e-300 is below 0.0001"},
		{"too many requests over the run", "name: s\nduration: 720h\n" + backend + "tenants:\n  - {group: x, count: 1000, host: \"s{i}.x\", load: {rate: 1000/s}}\n", "requests expected in all"},
		{"closed users in no time", "name: s\nduration: 720h\nbackend: {routes: [{name: r, path: /, service: 0s}]}\ntenants:\n  - {group: x, host: x.x, load: {model: closed, users: 1000, think: 0s}}\n", "requests expected in all"},
	} {
		checkParseError(t, tt.name, "s.yaml", tt.src, tt.want)
	}
	// An override is held to the same bounds.
	src := "name: s\nduration: 1m\n" + backend + "tenants:\n  - {group: x, host: x.x, load: {rate: 1/s}}\n"
	if _, err := ParseWith("s.yaml", []byte(src), []string{"duration=100000h"}); err == nil || !strings.Contains(err.Error(), "--set duration=100000h") {
		t.Errorf("--set duration=100000h: %v, want the bound naming the override", err)
	}
}
