package accesslog

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"stampede/internal/synthlog"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestImportGolden holds what Import writes for a synthetic incident to
// the files under testdata: the scenario as it is and the trace by its
// hash, with the trace ordered by buckets and by whole keys alike, and
// with --fit.
func TestImportGolden(t *testing.T) {
	var log bytes.Buffer
	if err := synthlog.Write(&log, 30000, 7); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		opts       ImportOptions
		maxBuckets int
	}{
		{"trace", ImportOptions{Workers: 4}, maxBuckets},
		{"trace", ImportOptions{Workers: 4}, 0},
		{"fit", ImportOptions{Workers: 4, Fit: true}, maxBuckets},
	} {
		t.Run(fmt.Sprintf("%s/%d", tc.name, tc.maxBuckets), func(t *testing.T) {
			defer func(m int) { maxBuckets = m }(maxBuckets)
			maxBuckets = tc.maxBuckets
			_, sc, tr := importString(t, log.String(), synthlog.Format, tc.opts)
			got := fmt.Sprintf("%s# trace: %d bytes, sha256 %x\n", sc, len(tr), sha256.Sum256([]byte(tr)))
			path := filepath.Join("testdata", "import-"+tc.name+".golden")
			if *update && os.WriteFile(path, []byte(got), 0o644) != nil {
				t.Fatalf("-update could not write %s", path)
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading the golden file (go test -update writes it): %v", err)
			}
			if got != string(want) {
				t.Errorf("Import wrote, for %s:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}
