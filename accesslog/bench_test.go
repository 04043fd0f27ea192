package accesslog

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"stampede/internal/synthlog"
)

func BenchmarkParse(b *testing.B) {
	f := mustNginx(b, synthlog.Format)
	var buf bytes.Buffer
	if err := synthlog.Write(&buf, 1000, 1); err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n"))
	b.SetBytes(int64(buf.Len() / len(lines)))
	b.ReportAllocs()
	var e Entry
	i := 0
	cpu := cpuNow()
	for b.Loop() {
		if err := f.Parse(lines[i%len(lines)], &e); err != nil {
			b.Fatal(err)
		}
		i++
	}
	reportLines(b, b.N, cpuSince(cpu))
}

// cpuNow returns the CPU time the process has used: on a machine shared
// with others, wall time per line says more about them than about the
// parser, so the benchmarks report both.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func cpuSince(t time.Duration) time.Duration { return cpuNow() - t }

// reportLines reports lines a second, of wall time and of CPU time (the
// process's, on all its threads: one core's worth under GOMAXPROCS=1).
func reportLines(b *testing.B, lines int, cpu time.Duration) {
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
	if cpu > 0 {
		b.ReportMetric(float64(lines)/cpu.Seconds(), "cpu-lines/s")
		b.ReportMetric(cpu.Seconds()*1e9/float64(lines), "cpu-ns/line")
	}
}

// BenchmarkImport imports a synthetic log of STAMPEDE_BENCH_LINES lines
// (default 1,000,000), written once to a temporary directory, or the log
// STAMPEDE_BENCH_LOG names (in synthlog.Format: bench/genlog writes one): the
// whole import, from the file to the scenario and its trace.
func BenchmarkImport(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("STAMPEDE_BENCH_LINES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	path := os.Getenv("STAMPEDE_BENCH_LOG")
	if path == "" {
		path = filepath.Join(b.TempDir(), "access.log")
		fh, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := synthlog.Write(fh, n, 1); err != nil {
			b.Fatal(err)
		}
		fh.Close()
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	f := mustNginx(b, synthlog.Format)
	b.SetBytes(fi.Size())
	b.ReportAllocs()
	cpu := cpuNow()
	var lines int64
	for b.Loop() {
		opts := ImportOptions{Logs: []string{path}, Format: f, Workers: 8, Name: "bench", TraceFile: "bench.trace"}
		sum, err := Import(context.Background(), opts, io.Discard, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		lines += sum.Lines
	}
	reportLines(b, int(lines), cpuSince(cpu))
}

func BenchmarkNormalPath(b *testing.B) {
	paths := [][]byte{[]byte("/app/sales-invoice/SINV-2026-00012"), []byte("/api/method/frappe.desk.form.load.getdoc"), []byte("/assets/frappe/dist/js/desk.bundle.0a1b2c3d.js"), []byte("/api/resource/Item/12345")}
	b.ReportAllocs()
	var dst []byte
	i := 0
	for b.Loop() {
		dst = NormalPath(dst[:0], paths[i%len(paths)])
		i++
	}
}
