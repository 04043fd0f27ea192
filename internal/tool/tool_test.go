package tool

import (
	"os"
	"testing"
)

func TestMissingProgramSkips(t *testing.T) {
	p := Program{Name: "stampede-no-such-program", DebianPath: "/nonexistent/stampede", Package: "none", RequireEnv: "STAMPEDE_TOOL_TEST_REQUIRE"}
	if path, ok := p.Path(); ok {
		t.Fatalf("Path() = %q, true; want false for a program that is nowhere", path)
	}
	os.Unsetenv(p.RequireEnv)
	var skipped bool
	t.Run("require", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		p.Require(t)
	})
	if !skipped {
		t.Errorf("Require of a missing program did not skip the test")
	}
}

func TestFoundProgram(t *testing.T) {
	p := Program{Name: "sh", DebianPath: "/nonexistent/sh", Package: "dash", RequireEnv: "STAMPEDE_TOOL_TEST_REQUIRE"}
	path, ok := p.Path()
	if !ok || path == "" {
		t.Skip("no sh in PATH")
	}
	if got := p.Require(t); got != path {
		t.Errorf("Require() = %q, want %q (Path's)", got, path)
	}
}
