package report

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"stampede/scenarios"
	"stampede/workerpool"
	"stampede/workload"
)

func statsOf(workers, busyMax, queueMax int, busy time.Duration) workerpool.Stats {
	return workerpool.Stats{Workers: workers, BusyMax: busyMax, QueueMax: queueMax, BusyTime: busy}
}

// writeHTML writes r's report.html to w, drawing its charts.
func writeHTML(w io.Writer, r *Results) error {
	charts, err := runCharts(r, formatPNG)
	if err != nil {
		return err
	}
	return writeReport(w, r, charts)
}

// pngChart draws r's charts as PNG and returns the one named name, failing
// the test when there is none.
func pngChart(t *testing.T, r *Results, name string) Chart {
	t.Helper()
	charts, err := runCharts(r, formatPNG)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range charts {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no %s chart", name)
	return Chart{}
}

// fileRoundTrip writes doc to a file, reads it back with read and writes
// that again with write, and returns what was read. It fails the test when
// the second writing differs from doc: a file must survive being read.
func fileRoundTrip[T any](t *testing.T, doc []byte, read func(path string) (T, error), write func(io.Writer, T) error) T {
	t.Helper()
	path := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := read(path)
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := write(&again, back); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), doc) {
		t.Errorf("%s changes when read and written again", path)
	}
	return back
}

// split records every third of rs in one recorder and the rest in the
// other, as two shards or two engine goroutines would.
func split(sc *scenarios.Scenario, rs []workload.Result) (a, b *Recorder) {
	a, b = NewRecorder(sc), NewRecorder(sc)
	for i := range rs {
		if i%3 == 0 {
			a.Add(&rs[i])
		} else {
			b.Add(&rs[i])
		}
	}
	return a, b
}
