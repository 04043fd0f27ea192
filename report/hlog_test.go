package report

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"stampede/workload"
)

func TestWriteHlogReadsBack(t *testing.T) {
	sc := recScenario()
	sc.Tenants[1].Group = "user x" // a space, which a tag cannot hold
	res := record(sc, bigRun(5000, 9)).Results(RunInfo{Engine: "sim", Start: time.UnixMilli(1764630278474)})
	var buf bytes.Buffer
	if err := WriteHlog(&buf, res); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{"#[Histogram log format version 1.3]", "model-time microseconds",
		"#[StartTime: 1764630278.474 (seconds since epoch), 2025-12-01T23:04:38.474Z]\n", "#[BaseTime: 1764630278.474 (seconds since epoch)]\n", `"StartTimestamp","Interval_Length"`, "Tag=other-sites,", "Tag=user_x,"} {
		if !strings.Contains(text, want) {
			t.Errorf("interval log lacks %q:\n%.400s", want, text)
		}
	}

	// The first interval line is what HistogramLogWriter writes for it.
	iv := res.Histograms.Intervals[0]
	h, err := decode(iv.Hist)
	if err != nil {
		t.Fatal(err)
	}
	h.SetTag(sanitizeTag(iv.Group))
	h.SetStartTimeMs(int64(iv.T * 1000))
	h.SetEndTimeMs(int64(iv.T*1000) + 1000)
	var lib bytes.Buffer
	if err := hdr.NewHistogramLogWriter(&lib).OutputIntervalPackedHistogram(h); err != nil {
		t.Fatal(err)
	}
	// The same fields, and the same histogram (stored rather than
	// deflated: see v2Encoder).
	got := strings.SplitAfter(text, "\n")[5]
	gi, li := strings.LastIndexByte(got, ','), strings.LastIndexByte(lib.String(), ',')
	if gi < 0 || li < 0 || got[:gi] != lib.String()[:li] {
		t.Errorf("first interval line:\n%s\nthe library writes:\n%s", got, lib.String())
	} else {
		sameEncoding(t, "first interval line", h, strings.TrimSuffix(got[gi+1:], "\n"))
	}

	rd := hdr.NewHistogramLogReader(&buf)
	count := map[string]int64{}
	merged := map[string]*hdr.Histogram{}
	lines := 0
	lastStart := int64(-1)
	for {
		h, err := rd.NextIntervalHistogram()
		if err == io.EOF || (err == nil && h == nil) {
			break
		}
		if err != nil {
			t.Fatalf("reading interval %d: %v", lines, err)
		}
		lines++
		if h.EndTimeMs()-h.StartTimeMs() != 1000 {
			t.Errorf("interval %d lasts %d ms, want 1000 (the series step)", lines, h.EndTimeMs()-h.StartTimeMs())
		}
		if h.StartTimeMs() < lastStart {
			t.Errorf("interval %d starts at %d ms, before the previous one (%d ms)", lines, h.StartTimeMs(), lastStart)
		}
		lastStart = h.StartTimeMs()
		count[h.Tag()] += h.TotalCount()
		if merged[h.Tag()] == nil {
			merged[h.Tag()] = hdr.New(histLowest, histHighest, histDigits)
		}
		merged[h.Tag()].Merge(h)
	}
	if lines != len(res.Histograms.Intervals) || lines < 20 {
		t.Errorf("%d intervals read back, want %d (at least 20)", lines, len(res.Histograms.Intervals))
	}
	for _, g := range res.Groups {
		tag := sanitizeTag(g.Name)
		if uint64(count[tag]) != g.OK {
			t.Errorf("group %s: the log holds %d ok responses, want %d", g.Name, count[tag], g.OK)
		}
		if got := latencyOf(packed(merged[tag])); got != g.Latency {
			t.Errorf("group %s: the log's intervals merged give %+v, want the group's %+v", g.Name, got, g.Latency)
		}
	}

	var again bytes.Buffer
	if err := WriteHlog(&again, res); err != nil {
		t.Fatal(err)
	}
	if again.String() != text {
		t.Errorf("the interval log is not deterministic")
	}
}

func TestWriteHlogWithoutHistograms(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteHlog(&buf, &Results{Scenario: "x", Series: &Series{Step: 1}}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), "\n"); n != 5 {
		t.Errorf("a log without histograms has %d lines, want the 5 header lines:\n%s", n, buf.String())
	}
	bad := &Results{Series: &Series{Step: 1}, Histograms: &Snapshots{Intervals: []IntervalSnapshot{{Group: "g", T: 2, Hist: "???"}}}}
	if err := WriteHlog(io.Discard, bad); err == nil || !strings.Contains(err.Error(), "group g at 2s") {
		t.Errorf("a bad interval gives error %v, want one naming group g at 2s", err)
	}
}

// BenchmarkWriteHlog writes the interval log of a ten-minute run: 600
// intervals of two groups.
func BenchmarkWriteHlog(b *testing.B) {
	sc := recScenario()
	sc.Duration = 10 * time.Minute
	r := NewRecorder(sc)
	for i := 0; i < 60000; i++ {
		r.Add(&workload.Result{Tenant: int32(i % 4), Outcome: workload.OK, Status: 200,
			Intended: time.Duration(i) * 10 * time.Millisecond, Latency: time.Duration(20+i%300) * time.Millisecond})
	}
	res := r.Results(RunInfo{})
	b.ReportAllocs()
	for b.Loop() {
		if err := WriteHlog(io.Discard, res); err != nil {
			b.Fatal(err)
		}
	}
}
