package report

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"stampede/workload"
)

// hdrReference returns the java binary and the reference HdrHistogram jar
// (Debian's libhdrhistogram-java), or skips the test; with
// STAMPEDE_REQUIRE_HDR_REFERENCE set, a missing one fails it.
func hdrReference(t *testing.T) (java, jar string) {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("STAMPEDE_REQUIRE_HDR_REFERENCE") != "" {
			t.Fatalf("STAMPEDE_REQUIRE_HDR_REFERENCE is set but %s", why)
		}
		t.Skipf("reference HdrHistogram library not available: %s (apt-get install libhdrhistogram-java)", why)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		missing("no java on PATH")
	}
	for _, p := range []string{os.Getenv("STAMPEDE_HDR_JAR"), "/usr/share/java/hdrhistogram.jar", "/usr/share/java/HdrHistogram.jar"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return java, p
		}
	}
	missing("no /usr/share/java/hdrhistogram.jar (or STAMPEDE_HDR_JAR)")
	return "", ""
}

// referenceRun is bigRun's results for the other-sites tenants and 1700 ok
// answers for user-x, 1698 of 10 to 59 ms and two of 1 s and 2 s: a count
// whose p99.9 rank (1698.3) the reference rounds up (to 1 s) and
// hdrhistogram-go rounds down (to at most 59 ms).
func referenceRun() []workload.Result {
	var rs []workload.Result
	for _, r := range bigRun(5000, 9) {
		if r.Tenant < 3 {
			rs = append(rs, r)
		}
	}
	for i := 1; i <= 1700; i++ {
		rs = append(rs, workload.Result{Tenant: 3, Route: 1, Outcome: workload.OK, Status: 200,
			Intended: time.Duration(i) * 5 * time.Millisecond, Latency: time.Duration(10+i%50) * time.Millisecond})
		if i > 1698 {
			rs[len(rs)-1].Latency = time.Duration(i-1698) * time.Second
		}
	}
	return rs
}

// TestPercentilesAgreeWithReferenceLibrary writes histograms.hlog, reads it
// with the Java HdrHistogram library, and holds every latency figure of
// results.json and every interval's p50 and p99 (the report's latency over
// time) against what that library computes from the log.
func TestPercentilesAgreeWithReferenceLibrary(t *testing.T) {
	java, jar := hdrReference(t)
	start := time.UnixMilli(1764630278474)
	res := record(recScenario(), referenceRun()).Results(RunInfo{Engine: "sim", Start: start})
	dir := t.TempDir()
	log := filepath.Join(dir, "histograms.hlog")
	var buf bytes.Buffer
	if err := WriteHlog(&buf, res); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(java, "-cp", jar, filepath.Join("testdata", "HlogReference.java"), log)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running the reference reader: %v\n%s", err, stderr.String())
	}

	// Sensitivity: the fixture must be one where the rank rules differ.
	ux, err := decode(res.Histograms.Tenants[3]) // user-x's one tenant
	if err != nil {
		t.Fatal(err)
	}
	if lib, ref := ux.ValueAtPercentile(99.9), valueAtPercentile(ux, 99.9); lib == ref {
		t.Fatalf("user-x p99.9: hdrhistogram-go and the reference rule both give %d µs; the fixture does not tell them apart", lib)
	}

	usMS := func(s string) float64 {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("reference output %q: %v", s, err)
		}
		return float64(v) / 1000
	}
	intervals := map[string]IntervalSnapshot{}
	for _, iv := range res.Histograms.Intervals {
		intervals[fmt.Sprintf("%s %d", sanitizeTag(iv.Group), start.UnixMilli()+int64(math.Round(iv.T*1000)))] = iv
	}
	groups, nIntervals := 0, 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "start":
			if want := fmt.Sprintf("%.3f", float64(start.UnixMilli())/1000); f[1] != want {
				t.Errorf("the reference reads StartTime %s, want %s", f[1], want)
			}
		case len(f) == 6 && f[0] == "interval":
			nIntervals++
			iv, ok := intervals[f[1]+" "+f[2]]
			if !ok {
				t.Errorf("the reference reads an interval %s at %s ms that results.json does not hold", f[1], f[2])
				continue
			}
			h, err := decode(iv.Hist)
			if err != nil {
				t.Fatal(err)
			}
			got := [3]float64{float64(h.TotalCount()), float64(valueAtPercentile(h, 50)) / 1000, float64(valueAtPercentile(h, 99)) / 1000}
			if want := [3]float64{usMS(f[3]) * 1000, usMS(f[4]), usMS(f[5])}; got != want {
				t.Errorf("interval %s at %gs: count, p50, p99 = %v, the reference %v", iv.Group, iv.T, got, want)
			}
		case len(f) == 11 && f[0] == "group":
			groups++
			var g *GroupResult
			for i := range res.Groups {
				if sanitizeTag(res.Groups[i].Name) == f[1] {
					g = &res.Groups[i]
				}
			}
			if g == nil {
				t.Errorf("the reference reads group %s, which results.json lacks", f[1])
				continue
			}
			mean, err := strconv.ParseFloat(f[4], 64)
			if err != nil {
				t.Fatal(err)
			}
			want := Latency{Count: uint64(usMS(f[2]) * 1000), Min: usMS(f[3]), Mean: math.Round(mean) / 1000,
				P50: usMS(f[5]), P90: usMS(f[6]), P95: usMS(f[7]), P99: usMS(f[8]), P999: usMS(f[9]), Max: usMS(f[10])}
			got := g.Latency
			if math.Abs(got.Mean-want.Mean) <= 0.001 { // the mean's sum runs in another order
				got.Mean = want.Mean
			}
			if got != want {
				t.Errorf("group %s: results.json says\n%+v\nthe reference library computes\n%+v", g.Name, g.Latency, want)
			}
		}
	}
	if groups != len(res.Groups) || nIntervals != len(res.Histograms.Intervals) {
		t.Errorf("the reference read %d groups and %d intervals, want %d and %d:\n%s", groups, nIntervals, len(res.Groups), len(res.Histograms.Intervals), out)
	}
}

func TestReferenceRank(t *testing.T) {
	for _, c := range []struct {
		p    float64
		n    int64
		want int64
	}{
		{99.9, 1700, 1699}, // 1698.3 rounds up; hdrhistogram-go takes 1698
		{99.9, 1000, 999},  // exact: the ulp taken off keeps it from becoming 1000
		{50, 16, 8},
		{90, 16, 15}, // 14.4
		{0, 10, 1},
		{100, 10, 10},
		{99, 1, 1},
		{150, 10, 10},
		{-5, 10, 1},
	} {
		if got := referenceRank(c.p, c.n); got != c.want {
			t.Errorf("referenceRank(%v, %d) = %d, want %d", c.p, c.n, got, c.want)
		}
	}
}
