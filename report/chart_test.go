package report

import (
	"bytes"
	"cmp"
	"fmt"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"stampede/workload"
)

// synthResults returns a deterministic run of the story's shape: one noisy
// tenant opening reports, and tenants-1 ordinary sites, behind a per-key
// limit of 4 on an 8-worker backend, over ten model minutes.
func synthResults(tenants int) *Results {
	rng := rand.New(rand.NewPCG(1, 2))
	const buckets = 600
	r := &Results{
		Schema: Schema, Scenario: "stock-balance", Engine: "sim", TimeScale: 0.01,
		ModelDurationS: buckets, WallDurationS: 6.2, Seed: 42,
		Version: "v0.4.0-test", CommandLine: "stampede run scenarios/stock-balance.yaml -o out --set proxy.limit_conn.per_key=4",
		Settings: map[string]string{"proxy.limit_conn.per_key": "4"},
		Backend:  BackendResult{Workers: 8, BusyMax: 8, QueueMax: 37, Utilization: 0.81},
		SLO: []SLOResult{
			{Name: "other-sites: p99 < 1s", Pass: false, Value: 14200, Threshold: 1000, Group: "other-sites", Metric: "p99", Op: "<"},
			{Name: "other-sites: ok_rate >= 0.99", Pass: true, Value: 0.995, Threshold: 0.99, Group: "other-sites", Metric: "ok_rate", Op: ">="},
		},
	}
	groups := []GroupResult{{Name: "noisy", Tenants: 1}, {Name: "other-sites", Tenants: tenants - 1}}
	gh := make([]*hdr.PackedHistogram, len(groups))
	hists := &Snapshots{}
	for i := 0; i < tenants; i++ {
		t := TenantResult{Name: "noisy", Group: "noisy", Host: "site1.example"}
		if i > 0 {
			t = TenantResult{Name: fmt.Sprintf("other-sites-%d", i), Group: "other-sites", Host: fmt.Sprintf("site%d.example", i+1)}
		}
		n := uint64(200 + rng.IntN(400))
		t.Requests = n
		t.Rejected = uint64(rng.IntN(3))
		t.ClientTimeouts = uint64(rng.IntN(2))
		if i == 0 {
			t.Requests, t.Rejected, t.ClientTimeouts = 120, 70, 10
		}
		t.OK = t.Requests - t.Rejected - t.ClientTimeouts
		t.Status = map[string]uint64{"200": t.OK, "503": t.Rejected}
		// Latencies: lognormal around a few tens of ms with a slow 1%
		// tail for the sites, minutes for the noisy tenant's reports.
		h := newHist()
		for j := uint64(0); j < t.OK; j++ {
			ms := (30 + 20*rng.Float64()) * math.Exp(0.6*rng.NormFloat64())
			if i == 0 {
				ms = 150_000 * math.Exp(0.3*rng.NormFloat64())
			} else if rng.IntN(100) == 0 {
				ms *= 50 + 200*rng.Float64()
			}
			h.RecordValue(int64(ms * 1000))
		}
		t.Latency = latencyOf(h)
		r.Tenants = append(r.Tenants, t)
		hists.Tenants = append(hists.Tenants, encode(h))
		g := &groups[min(i, 1)]
		sumInto(&g.Counts, t.Counts)
		sumInto(&r.Totals, t.Counts)
		if gh[min(i, 1)] == nil {
			gh[min(i, 1)] = newHist()
		}
		gh[min(i, 1)].Merge(h)
	}
	for i := range groups {
		groups[i].Latency = latencyOf(gh[i])
	}
	r.Groups = groups
	r.Histograms = hists
	r.Routes = []RouteResult{
		{Name: "stock-balance", Counts: groups[0].Counts, Latency: groups[0].Latency},
		{Name: "desk", Counts: groups[1].Counts, Latency: groups[1].Latency},
	}

	s := &Series{Step: 1, Limit: 4}
	for _, g := range groups {
		gs := GroupSeries{Name: g.Name, Counts: make([][workload.NumOutcomes]uint32, buckets)}
		for b := range gs.Counts {
			if g.Name == "noisy" {
				if b%20 < 4 {
					gs.Counts[b][workload.OK] = uint32(rng.IntN(2))
					gs.Counts[b][workload.Rejected] = uint32(rng.IntN(3))
				}
				continue
			}
			load := 100 + 40*math.Sin(float64(b)/60)
			gs.Counts[b][workload.OK] = uint32(load * (0.9 + 0.1*rng.Float64()))
			if b > 200 && b < 260 {
				gs.Counts[b][workload.ClientTimeout] = uint32(rng.IntN(30))
				gs.Counts[b][workload.GatewayTimeout] = uint32(rng.IntN(10))
				gs.Counts[b][workload.BackendError] = uint32(rng.IntN(5))
			}
			gs.Counts[b][workload.Rejected] = uint32(rng.IntN(4))
		}
		s.Groups = append(s.Groups, gs)
	}
	for t := 0.0; t < buckets; t += 0.5 {
		busy := min(8, 3+rng.IntN(4)+int(t/100))
		q := 0
		if busy == 8 {
			q = rng.IntN(37)
		}
		s.Backend = append(s.Backend, BackendSample{T: t, Busy: busy, Queued: q})
	}
	for k := 0; k < 12; k++ {
		ks := KeySeries{Key: fmt.Sprintf("site%d.example", k+1)}
		for t := 0.0; t < buckets; t += 2 {
			n := rng.IntN(2)
			if k == 0 {
				n = min(4, int(t/30)%6)
			}
			ks.T = append(ks.T, t)
			ks.InFlight = append(ks.InFlight, n)
		}
		s.Keys = append(s.Keys, ks)
	}
	// One interval histogram per group and bucket with ok responses, as
	// histograms.hlog holds them: the sites slow down while the backend
	// is saturated (200 s to 260 s).
	var enc v2Encoder
	for b := 0; b < buckets; b++ {
		for gi, g := range s.Groups {
			n := g.Counts[b][workload.OK]
			if n == 0 {
				continue
			}
			h := newHist()
			for j := uint32(0); j < n; j++ {
				ms := (30 + 20*rng.Float64()) * math.Exp(0.6*rng.NormFloat64())
				if gi == 0 {
					ms = 150_000 * math.Exp(0.3*rng.NormFloat64())
				} else if b > 200 && b < 260 {
					ms *= 20
				}
				h.RecordValue(int64(ms * 1000))
			}
			hists.Intervals = append(hists.Intervals, IntervalSnapshot{Group: g.Name, T: float64(b), Hist: enc.encode(h)})
		}
	}
	r.Series = s
	return r
}

// hostsResults is synthResults for a run whose limiter counted no keys
// (limit_req only, or no limit): the busiest hosts stand in for them.
func hostsResults() *Results {
	r := synthResults(40)
	r.Series.Keys = nil
	r.Series.Limit = 0
	for k := 0; k < 12; k++ {
		h := HostSeries{Host: fmt.Sprintf("site%d.example", k+1), Tenants: []string{r.Tenants[k].Name}, InFlight: make([]float64, 600)}
		for b := range h.InFlight {
			h.InFlight[b] = float64(12-k) * (1 + math.Sin(float64(b)/40)) / 2
		}
		r.Series.Hosts = append(r.Series.Hosts, h)
	}
	return r
}

// emptyResults is a run that recorded nothing at all.
func emptyResults() *Results {
	return &Results{Schema: Schema, Scenario: "empty", Engine: "sim"}
}

// checkPNG decodes a chart's PNG and checks its size and that it is drawn:
// enough non-white pixels in several distinct colours.
func checkPNG(t *testing.T, ch Chart, minColors int, minInk float64) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(ch.PNG))
	if err != nil {
		t.Fatalf("chart %s: decoding PNG: %v", ch.Name, err)
	}
	b := img.Bounds()
	if b.Dx() != ch.Width || b.Dy() != ch.Height || b.Dx() < 1000 {
		t.Errorf("chart %s: PNG is %dx%d, want %dx%d and at least 1000 wide", ch.Name, b.Dx(), b.Dy(), ch.Width, ch.Height)
	}
	colors, share := pixelStats(img)
	if share < minInk || share > 0.9 {
		t.Errorf("chart %s: non-white share %.4f, want between %g and 0.9", ch.Name, share, minInk)
	}
	if colors < minColors {
		t.Errorf("chart %s: %d distinct colours, want at least %d", ch.Name, colors, minColors)
	}
}

// pixelStats counts the distinct colours of img (quantised to 5 bits a
// channel) and the share of its pixels that are not white, over every other
// pixel of every other row: plenty for a chart, and fast under -race.
func pixelStats(img image.Image) (colors int, nonWhite float64) {
	var seen [1 << 15]bool
	b := img.Bounds()
	n, ink := 0, 0
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			k := (r>>11)<<10 | (g>>11)<<5 | bl>>11
			if !seen[k] {
				seen[k] = true
				colors++
			}
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				ink++
			}
			n++
		}
	}
	return colors, float64(ink) / float64(n)
}

func TestChartsDecodeAndAreDrawn(t *testing.T) {
	charts, err := runCharts(synthResults(250), formatPNG|formatSVG)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"latency", "shares", "latency-time", "outcomes", "backend", "keys", "fairness"}
	if len(charts) != len(want) {
		t.Fatalf("got %d charts, want %d", len(charts), len(want))
	}
	for i, ch := range charts {
		if ch.Name != want[i] {
			t.Errorf("chart %d: name %q, want %q", i, ch.Name, want[i])
		}
		checkPNG(t, ch, 8, 0.01)
		if !bytes.HasPrefix(bytes.TrimSpace(ch.SVG), []byte("<?xml")) || !bytes.Contains(ch.SVG, []byte("</svg>")) {
			t.Errorf("chart %s: SVG is not a whole SVG document (%d bytes)", ch.Name, len(ch.SVG))
		}
	}
}

func TestChartsOfEmptyRunSayNoData(t *testing.T) {
	for name, tc := range map[string]struct {
		r    *Results
		want int
	}{
		"empty": {emptyResults(), 6},
		// No backend samples: a --target run that did not poll its backend,
		// whose backend chart is left out.
		"series without samples":  {&Results{Scenario: "x", Series: &Series{Step: 1, Groups: []GroupSeries{{Name: "g", Counts: make([][workload.NumOutcomes]uint32, 3)}}}}, 5},
		"groups without requests": {&Results{Scenario: "x", Groups: []GroupResult{{Name: "g"}}, Tenants: []TenantResult{{Name: "t"}}}, 6},
	} {
		r := tc.r
		charts, err := runCharts(r, formatPNG|formatSVG)
		if name != "empty" {
			charts, err = runCharts(r, formatPNG) // the SVG path is the same drawing
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(charts) != tc.want {
			t.Fatalf("%s: got %d charts, want %d", name, len(charts), tc.want)
		}
		for _, ch := range charts {
			checkPNG(t, ch, 3, 0.002) // title and "no data" in grey
			if ch.SVG != nil && !strings.Contains(string(ch.SVG), "no data") {
				t.Errorf("%s: chart %s does not say \"no data\"", name, ch.Name)
			}
		}
	}
}

// TestNewChartsSayWhatTheyShow checks the charts added for latency over
// time, outcome shares, SLO lines and the hosts' in-flight requests: each
// decodes at its size, is drawn, and names what it must.
func TestNewChartsSayWhatTheyShow(t *testing.T) {
	for _, tc := range []struct {
		r     *Results
		chart string
		want  []string
	}{
		{synthResults(250), "latency-time", []string{"other-sites p99", "noisy p50", "SLO other-sites: p99 &lt; 1s"}},
		{synthResults(250), "latency", []string{"SLO other-sites: p99 &lt; 1s", "leaves out the 0.5% of requests"}},
		{synthResults(250), "shares", []string{"rejected", "client timeout", "ok_rate SLOs"}},
		{synthResults(250), "fairness", []string{"other-sites-1 (site2.example)"}},
		{hostsResults(), "keys", []string{"Requests in flight per host", "noisy (site1.example)", "no limit_conn"}},
	} {
		charts, err := runCharts(tc.r, formatPNG|formatSVG)
		if err != nil {
			t.Fatal(err)
		}
		var ch *Chart
		for i := range charts {
			if charts[i].Name == tc.chart {
				ch = &charts[i]
			}
		}
		if ch == nil {
			t.Fatalf("no %s chart", tc.chart)
		}
		checkPNG(t, *ch, 8, 0.01)
		svg := string(ch.SVG)
		if strings.Contains(svg, "no data") {
			t.Errorf("chart %s says no data", tc.chart)
		}
		for _, w := range tc.want {
			if !strings.Contains(svg, w) {
				t.Errorf("chart %s does not say %q", tc.chart, w)
			}
		}
	}
}

// TestLatencyTimeZeroBucket draws latency over time where a bucket's
// answers all took 0 ms (the tare can take a live answer to 0) beside
// the noisy group's minutes: the log scale has no 0, and the chart must
// still be drawn, not fail the report.
func TestLatencyTimeZeroBucket(t *testing.T) {
	r := synthResults(20)
	h := newHist()
	for range 10 {
		h.RecordValue(0)
	}
	var enc v2Encoder
	r.Histograms.Intervals = append(r.Histograms.Intervals, IntervalSnapshot{Group: "other-sites", T: 7, Hist: enc.encode(h)})
	slices.SortStableFunc(r.Histograms.Intervals, func(a, b IntervalSnapshot) int { return cmp.Compare(a.T, b.T) })
	charts, err := runCharts(r, formatPNG)
	if err != nil {
		t.Fatalf("charts with a 0 ms bucket: %v", err)
	}
	for _, ch := range charts {
		if ch.Name == "latency-time" {
			checkPNG(t, ch, 8, 0.01)
			return
		}
	}
	t.Fatal("no latency-time chart")
}

func TestSummarySpectrum(t *testing.T) {
	l := Latency{Count: 500, P50: 10, P90: 20, P95: 30, P99: 40, P999: 50, Max: 60}
	got := summarySpectrum(l)
	// 500 samples support ranks up to 1/(1−p) = 500: p99.9 is beyond them.
	want := []spectrumPoint{{2, 10}, {10, 20}, {20, 30}, {100, 40}, {500, 60}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("summarySpectrum = %v, want %v", got, want)
	}
	if got := summarySpectrum(Latency{}); got != nil {
		t.Errorf("summarySpectrum(empty) = %v, want nil", got)
	}
}

func TestFairnessShares(t *testing.T) {
	r := &Results{Tenants: []TenantResult{
		{Name: "a", Counts: Counts{OK: 10, Rejected: 90}, Latency: Latency{Mean: 1000}},
		{Name: "b", Counts: Counts{OK: 100, Rejected: 10}, Latency: Latency{Mean: 50}},
		{Name: "c", Counts: Counts{OK: 100}, Latency: Latency{Mean: 50}},
		{Name: "d", Counts: Counts{OK: 100}, Latency: Latency{Mean: 50}},
	}}
	check := func(what string, got []tenantShare, exact bool, want []tenantShare, wantExact bool) {
		t.Helper()
		if len(got) != len(want) || exact != wantExact {
			t.Fatalf("%s: got %v (exact %v), want %v (exact %v)", what, got, exact, want, wantExact)
		}
		for i := range want {
			if got[i].name != want[i].name || math.Abs(got[i].rejected-want[i].rejected) > 1e-9 || math.Abs(got[i].usage-want[i].usage) > 1e-9 {
				t.Errorf("%s: step %d: got %+v, want %+v", what, i+1, got[i], want[i])
			}
		}
	}
	// No worker time in the results: estimated from ok × mean latency,
	// a 10000, b c d 5000 each → 0.4, 0.2, 0.2, 0.2.
	got, exact := fairnessShares(r, 2)
	check("estimated", got, exact, []tenantShare{{"a", 0.9, 0.4}, {"b", 0.1, 0.2}, {"the other 2", 0, 0.4}}, false)

	// With worker time the shares are exact, and differ from the estimate:
	// a's answers were slow from waiting in the backlog, not from work.
	// A tenant whose requests all timed out still used workers.
	r.Tenants[0].WorkS = 1
	r.Tenants[1].WorkS = 5
	r.Tenants[2].WorkS = 2
	r.Tenants[3].WorkS = 2
	r.Tenants = append(r.Tenants, TenantResult{Name: "e", Counts: Counts{ClientTimeouts: 3}, WorkS: 10})
	got, exact = fairnessShares(r, 2)
	check("exact", got, exact, []tenantShare{{"a", 0.9, 0.05}, {"e", 0, 0.5}, {"the other 3", 0.1, 0.45}}, true)

	if e, x := fairnessSubtitle(false), fairnessSubtitle(true); !strings.Contains(e, "estimated") || strings.Contains(x, "estimated") {
		t.Errorf("subtitles: estimated %q, exact %q; want only the first to say estimated", e, x)
	}
}

// TestFairnessChartExact draws the fairness chart of results with worker
// time and without, and checks that the exact one is drawn and differs.
func TestFairnessChartExact(t *testing.T) {
	est := synthResults(30)
	exact := synthResults(30)
	for i := range exact.Tenants {
		// The noisy tenant held 4 workers for the whole run; the sites
		// 30 ms per ok answer.
		exact.Tenants[i].WorkS = float64(exact.Tenants[i].OK) * 0.03
	}
	exact.Tenants[0].WorkS = 4 * exact.ModelDurationS
	if s, x := fairnessShares(exact, fairnessTop); !x || s[0].name != "noisy (site1.example)" || s[0].usage < 0.5 {
		t.Fatalf("exact shares: %v (exact %v), want exact with noisy first, over half the worker time", s[:min(3, len(s))], x)
	}
	if s, x := fairnessShares(est, fairnessTop); x || s[0].name != "noisy (site1.example)" {
		t.Fatalf("estimated shares: %v (exact %v), want estimated with noisy first", s[:min(3, len(s))], x)
	}
	draw := func(r *Results) Chart {
		c := pngChart(t, r, "fairness")
		checkPNG(t, c, 4, 0.02)
		return c
	}
	if a, b := draw(est), draw(exact); bytes.Equal(a.PNG, b.PNG) {
		t.Errorf("the fairness chart with worker time is the same image as the estimate")
	}
}

func TestMSLogTicks(t *testing.T) {
	for i, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{5, 600, "5 ms,10 ms,20 ms,50 ms,100 ms,200 ms,500 ms"},
		{0.5, 300_000, "1 ms,10 ms,100 ms,1 s,10 s,1 min"},
	} {
		var labels []string
		for _, tk := range (msLogTicks{}).Ticks(tc.lo, tc.hi) {
			labels = append(labels, tk.Label)
		}
		if got := strings.Join(labels, ","); got != tc.want {
			t.Errorf("step %d: ticks(%g, %g) = %s, want %s", i, tc.lo, tc.hi, got, tc.want)
		}
	}
}

func BenchmarkCharts250(b *testing.B) {
	r := synthResults(250)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := runCharts(r, formatPNG); err != nil {
			b.Fatal(err)
		}
	}
}
