package main

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestWriteSet(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	files := func(names ...string) func(string) error {
		return func(tmp string) error {
			for _, n := range names {
				if err := os.WriteFile(filepath.Join(tmp, n), []byte("new "+n), 0o644); err != nil {
					return err
				}
			}
			return nil
		}
	}
	ls := func(d string) []string {
		ents, _ := os.ReadDir(d)
		var out []string
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	// step 1: a fresh directory is renamed into place whole.
	if err := writeSet(dir, files("results.json", "a.png", "report.html")); err != nil {
		t.Fatal(err)
	}
	if got, want := ls(dir), []string{"a.png", "report.html", "results.json", setManifest}; !slices.Equal(got, want) {
		t.Errorf("step 1: %v, want %v", got, want)
	}
	// step 2: over an old set beside a file and a folder of the user's:
	// the old set's file the new one lacks goes, the user's stay.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644)
	os.Mkdir(filepath.Join(dir, "point-1"), 0o755)
	if err := writeSet(dir, files("results.json", "b.png", "report.html")); err != nil {
		t.Fatal(err)
	}
	if got, want := ls(dir), []string{"b.png", "notes.txt", "point-1", "report.html", "results.json", setManifest}; !slices.Equal(got, want) {
		t.Errorf("step 2: %v, want %v", got, want)
	}
	if got := readManifest(filepath.Join(dir, setManifest)); !slices.Equal(got, []string{"b.png", "report.html", "results.json"}) {
		t.Errorf("step 2: manifest lists %v", got)
	}
	// step 3: a write that fails leaves the old set whole.
	boom := errors.New("boom")
	err := writeSet(dir, func(tmp string) error {
		os.WriteFile(filepath.Join(tmp, "results.json"), []byte("half"), 0o644)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("step 3: %v, want boom", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "results.json")); string(b) != "new results.json" {
		t.Errorf("step 3: results.json is %q after a failed write", b)
	}
	// Nothing hidden is left beside the output or in it.
	for _, d := range []string{parent, dir} {
		for _, n := range ls(d) {
			if strings.HasPrefix(n, ".") {
				t.Errorf("%s: left %s behind", d, n)
			}
		}
	}
}
