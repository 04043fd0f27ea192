package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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

// TestWriteSetKilled kills a process that writes sets into one directory
// over and over with SIGKILL at several moments: afterwards, whenever the
// directory has a manifest, every file it lists is of one set, and the next
// write leaves nothing hidden behind.
func TestWriteSetKilled(t *testing.T) {
	if os.Getenv("STAMPEDE_WRITESET_LOOP") != "" {
		dir := os.Getenv("STAMPEDE_WRITESET_LOOP")
		for gen := 0; ; gen++ {
			g := strconv.Itoa(gen)
			writeSet(dir, func(tmp string) error {
				for _, n := range []string{"results.json", "histograms.hlog", "report.html", "chart-" + strconv.Itoa(gen%3) + ".png"} {
					if err := os.WriteFile(filepath.Join(tmp, n), bytes.Repeat([]byte(g+"\n"), 2000), 0o644); err != nil {
						return err
					}
				}
				return nil
			})
		}
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	for round, wait := range []time.Duration{5 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 120 * time.Millisecond} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWriteSetKilled$")
		cmd.Env = append(os.Environ(), "STAMPEDE_WRITESET_LOOP="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The child may first wait for the test lock (TestMain): time the
		// kill from its first complete set.
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(filepath.Join(dir, setManifest)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				cmd.Wait()
				t.Skip("the writing process wrote no set within 2 minutes (the test lock held elsewhere?)")
			}
		}
		time.Sleep(wait)
		cmd.Process.Kill()
		cmd.Wait()
		listed := readManifest(filepath.Join(dir, setManifest))
		gens := map[string]bool{}
		for _, f := range listed {
			b, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Errorf("round %d: the manifest lists %s: %v", round, f, err)
				continue
			}
			if !bytes.HasSuffix(b, b[:bytes.IndexByte(b, '\n')+1]) || len(b) != 2000*(bytes.IndexByte(b, '\n')+1) {
				t.Errorf("round %d: %s is half written", round, f)
			}
			gens[string(b[:bytes.IndexByte(b, '\n')])] = true
		}
		if len(gens) > 1 {
			t.Errorf("round %d: the manifest lists files of sets %v: a mixed set", round, gens)
		}
		t.Logf("round %d: killed after %v: %d files listed, of set %v", round, wait, len(listed), gens)
	}
	if err := writeSet(dir, func(tmp string) error { return os.WriteFile(filepath.Join(tmp, "results.json"), []byte("x"), 0o644) }); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{parent, dir} {
		ents, _ := os.ReadDir(d)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				t.Errorf("%s: %s left behind after a write that followed the kills", d, e.Name())
			}
		}
	}
}
