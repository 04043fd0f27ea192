package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"stampede/report"
)

// setManifest is the file that marks a directory's set of output complete
// and lists its files: written last, removed first. A directory without it
// (or whose manifest does not list a file) holds no complete set.
const setManifest = "stampede.set"

// manifestHeader is the manifest's first line.
const manifestHeader = "# the files of one complete stampede output; written after them"

// writeSet writes one set of output files into dir so that, whenever the
// process is killed (even by kill -9), dir holds either the whole previous
// set or the whole new one, or no manifest: never a new results.json beside
// an old report.html under a manifest. write writes the set into a fresh
// temporary directory beside dir (on the same file system). When dir does
// not exist, that directory is renamed into place. Otherwise dir's manifest
// is removed, each new file renamed over its old one, the files of the old
// set the new one lacks removed, and the new manifest written. Other files
// and subdirectories of dir (a sweep's points) are left alone. When dir
// holds its previous set alone, the two directories are swapped instead:
// a kill leaves dir the old set, the new one, or absent, never mixed.
func writeSet(dir string, write func(tmp string) error) error {
	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	prefix := "." + filepath.Base(filepath.Clean(dir)) + ".partial-"
	// What a killed writer left: a set never renamed into place, or an
	// old one already replaced.
	for _, pat := range []string{prefix + "*", "." + filepath.Base(filepath.Clean(dir)) + ".old-*"} {
		stale, _ := filepath.Glob(filepath.Join(parent, pat))
		for _, p := range stale {
			os.RemoveAll(p)
		}
	}
	tmp, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	defer os.RemoveAll(tmp) // nothing left once renamed
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := write(tmp); err != nil {
		return err
	}
	ents, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	var files []string
	for _, e := range ents {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			files = append(files, e.Name())
		}
	}
	manifest := manifestHeader + "\n" + strings.Join(files, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(tmp, setManifest), []byte(manifest), 0o644); err != nil {
		return err
	}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		if err := os.Rename(tmp, dir); err == nil {
			return nil
		}
	}
	old := readManifest(filepath.Join(dir, setManifest))
	if onlySet(dir, old) {
		// dir holds the old set alone: swap the directories, so that
		// dir is at every moment the old set, the new one, or absent.
		prev := filepath.Join(parent, "."+filepath.Base(filepath.Clean(dir))+".old-"+filepath.Base(tmp)[len(prefix):])
		if err := os.Rename(dir, prev); err == nil {
			if err := os.Rename(tmp, dir); err != nil {
				os.Rename(prev, dir)
				return fmt.Errorf("writing %s: %w", dir, err)
			}
			return os.RemoveAll(prev)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(dir, setManifest)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("writing %s: %w", dir, err)
	}
	for _, f := range files {
		if err := os.Rename(filepath.Join(tmp, f), filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("writing %s: %w", dir, err)
		}
	}
	for _, f := range old {
		if !slices.Contains(files, f) && f == filepath.Base(f) {
			os.Remove(filepath.Join(dir, f)) // a chart the new set does not draw
		}
	}
	return os.Rename(filepath.Join(tmp, setManifest), filepath.Join(dir, setManifest))
}

// onlySet reports whether dir holds nothing but the files of its manifest,
// which lists old, and the manifest itself.
func onlySet(dir string, old []string) bool {
	if old == nil {
		return false
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name() != setManifest && (!e.Type().IsRegular() || !slices.Contains(old, e.Name())) {
			return false
		}
	}
	return true
}

// readManifest returns the files a manifest lists; none when it is absent.
func readManifest(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// writeRunSet writes a run's results.json and histograms.hlog as one set,
// and withReport its report.html and charts (without, stampede report
// renders them later from the results).
func writeRunSet(dir string, res *report.Results, withReport bool) error {
	return writeSet(dir, func(dir string) error {
		if err := writeFile(filepath.Join(dir, "results.json"), func(f *os.File) error { return report.WriteJSON(f, res) }); err != nil {
			return err
		}
		if err := writeFile(filepath.Join(dir, "histograms.hlog"), func(f *os.File) error { return report.WriteHlog(f, res) }); err != nil {
			return err
		}
		if !withReport {
			return nil
		}
		return report.RenderReport(dir, res)
	})
}
