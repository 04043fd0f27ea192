package report

import (
	"bytes"
	"flag"
	"fmt"
	"html"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"stampede/internal/golden"
)

var (
	outDir = flag.String("outdir", "", "also write the rendered test reports under this directory, to look at")
)

var (
	reTag      = regexp.MustCompile(`(?s)<(h[1-3]|p class="(?:verdict|summary|warning|note)[^"]*"[^>]*|figcaption)[^>]*>(.*?)</(?:h[1-3]|p|figcaption)>`)
	reTable    = regexp.MustCompile(`(?s)<table id="([^"]+)">(.*?)</table>`)
	reTH       = regexp.MustCompile(`(?s)<th[^>]*>(.*?)</th>`)
	reRow      = regexp.MustCompile(`(?s)<tr>(.*?)</tr>`)
	reTD       = regexp.MustCompile(`(?s)<td[^>]*>(.*?)</td>`)
	reMarkup   = regexp.MustCompile(`<[^>]+>`)
	reImg      = regexp.MustCompile(`<img [^>]*>`)
	reDataURI  = regexp.MustCompile(`data:image/png;base64,(?:[A-Za-z0-9+/=]|&#43;)+`)
	reInfo     = regexp.MustCompile(`(?s)<dt>(.*?)</dt>\s*<dd>(.*?)</dd>`)
	reExternal = regexp.MustCompile(`(?i)(src|href|action|srcset|poster)\s*=\s*["']?\s*(https?:|//|ftp:)|url\(\s*["']?\s*(https?:|//)|@import|<script[^>]*\ssrc|<link|<iframe|<object|<embed`)
	reLink     = regexp.MustCompile(`<a [^>]*href="([^"]*)"`)
)

// structure digests a report into what its golden file holds: headings,
// verdict and notes in order, each table's header and first cells of its
// rows, the images (with their data replaced by their size), and the links.
func structure(page string) string {
	var b strings.Builder
	text := func(s string) string {
		return strings.Join(strings.Fields(html.UnescapeString(reMarkup.ReplaceAllString(s, ""))), " ")
	}
	type item struct {
		at  int
		out string
	}
	var items []item
	for _, m := range reTag.FindAllStringSubmatchIndex(page, -1) {
		tag := page[m[2]:m[3]]
		if i := strings.IndexByte(tag, ' '); i >= 0 {
			tag = strings.Trim(tag[i+1:], `"`)
			tag = strings.TrimPrefix(tag, `class="`)
			if j := strings.IndexByte(tag, '"'); j >= 0 {
				tag = tag[:j]
			}
		}
		items = append(items, item{m[0], fmt.Sprintf("%s: %s", tag, text(page[m[4]:m[5]]))})
	}
	for _, m := range reTable.FindAllStringSubmatchIndex(page, -1) {
		body := page[m[4]:m[5]]
		var heads []string
		for _, h := range reTH.FindAllStringSubmatch(body, -1) {
			heads = append(heads, text(h[1]))
		}
		var rows []string
		for _, r := range reRow.FindAllStringSubmatch(body, -1) {
			tds := reTD.FindAllStringSubmatch(r[1], 3)
			if len(tds) == 0 {
				continue
			}
			var cells []string
			for _, td := range tds {
				cells = append(cells, text(td[1]))
			}
			rows = append(rows, "    "+strings.Join(cells, " | "))
		}
		out := fmt.Sprintf("table %s (%d rows): %s", page[m[2]:m[3]], len(rows), strings.Join(heads, " | "))
		if len(rows) > 5 {
			rows = append(rows[:5], "    …")
		}
		if len(rows) > 0 {
			out += "\n" + strings.Join(rows, "\n")
		}
		items = append(items, item{m[0], out})
	}
	for _, m := range reImg.FindAllStringIndex(page, -1) {
		tag := reDataURI.ReplaceAllStringFunc(page[m[0]:m[1]], func(string) string { return "data:image/png;base64,…" })
		items = append(items, item{m[0], "img: " + tag})
	}
	for _, m := range reInfo.FindAllStringSubmatchIndex(page, -1) {
		items = append(items, item{m[0], fmt.Sprintf("info: %s = %s", text(page[m[2]:m[3]]), text(page[m[4]:m[5]]))})
	}
	for _, m := range reLink.FindAllStringSubmatchIndex(page, -1) {
		items = append(items, item{m[0], "link: " + page[m[2]:m[3]]})
	}
	for i := 1; i < len(items); i++ { // insertion sort by position: small n
		for j := i; j > 0 && items[j].at < items[j-1].at; j-- {
			items[j], items[j-1] = items[j-1], items[j]
		}
	}
	for _, it := range items {
		b.WriteString(it.out)
		b.WriteByte('\n')
	}
	return b.String()
}

// checkGolden compares got with testdata/name, or rewrites it under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), []byte(got))
}

// checkSelfContained fails if page could make any request: external URLs,
// scripts, stylesheets or frames.
func checkSelfContained(t *testing.T, page string) {
	t.Helper()
	if m := reExternal.FindString(page); m != "" {
		t.Errorf("the report is not self-contained: found %q", m)
	}
	// xmlns declarations of inline SVG are names, not requests, and so are
	// the URLs in the inlined uPlot's banner and namespaces; anything else
	// naming http(s) is suspicious. (The browser test checks that no
	// request is made.)
	rest := strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, "")
	rest = strings.ReplaceAll(rest, uplotJS, "")
	if n := strings.Count(page, "<script"); n != 0 && n != 2 {
		t.Errorf("the report has %d scripts, want none or the chart data and the inlined charting code", n)
	}
	if strings.Contains(rest, "http://") || strings.Contains(rest, "https://") {
		i := max(0, strings.Index(rest, "http")-60)
		t.Errorf("the report names a URL: …%s…", rest[i:min(len(rest), i+120)])
	}
}

// renderTo renders the run report of r into a directory (-outdir/name if
// given, else a temporary one) and returns the directory and the page.
func renderTo(t *testing.T, name string, r *Results) (string, string) {
	t.Helper()
	dir := t.TempDir()
	if *outDir != "" {
		dir = filepath.Join(*outDir, name)
	}
	if err := RenderReport(dir, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	return dir, string(b)
}

// synthCharts are the charts of synthResults(250), drawn once: tests that
// check a page's structure reuse them rather than draw them again.
var synthCharts = sync.OnceValues(func() ([]Chart, error) { return runCharts(synthResults(250), formatPNG) })

// renderWith writes the report of r with the given charts into a fresh
// directory and returns the page.
func renderWith(t *testing.T, name string, r *Results, charts []Chart) string {
	t.Helper()
	var b bytes.Buffer
	if err := writeReport(&b, r, charts); err != nil {
		t.Fatal(err)
	}
	if *outDir != "" {
		if err := os.MkdirAll(filepath.Join(*outDir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(*outDir, name, "report.html"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

func TestRunReportGolden(t *testing.T) {
	interrupted := synthResults(12)
	interrupted.Interrupted = true
	interrupted.SLO = nil
	passing := synthResults(250)
	for i := range passing.SLO {
		passing.SLO[i].Pass = true
	}
	for _, tc := range []struct {
		name        string
		r           *Results
		verdict     string
		images      int
		tenantRows  int
		tenantsLeft string
	}{
		{"run-250", synthResults(250), "1 of 2 SLOs failed: other-sites p99 < 1s (was 14.2 s).", 7, maxTenantRows, "150 of 250 tenants"},
		{"run-passing", passing, "All 2 SLOs passed.", 7, maxTenantRows, "150 of 250 tenants"},
		{"run-interrupted", interrupted, "No SLOs were set for this scenario.", 7, 12, ""},
		{"run-empty", emptyResults(), "No SLOs were set for this scenario.", 6, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dir, page string
			switch tc.name {
			case "run-empty": // through RenderReport, PNG files too
				dir, page = renderTo(t, tc.name, tc.r)
			default: // synthResults(250)'s charts, drawn once for all tests
				charts, err := synthCharts()
				if err != nil {
					t.Fatal(err)
				}
				page = renderWith(t, tc.name, tc.r, charts)
			}
			checkSelfContained(t, page)
			if !strings.Contains(page, `id="verdict">`+html.EscapeString(tc.verdict)+`<`) {
				t.Errorf("verdict %q not found", tc.verdict)
			}
			if i, j := strings.Index(page, `id="verdict"`), strings.Index(page, "<img"); i < 0 || j < i {
				t.Errorf("the verdict (at %d) does not come before the charts (at %d)", i, j)
			}
			if got := len(reImg.FindAllString(page, -1)); got != tc.images {
				t.Errorf("%d images, want %d", got, tc.images)
			}
			if tc.r.Interrupted != strings.Contains(page, "This run was interrupted") {
				t.Errorf("interrupted warning shown = %v, want %v", !tc.r.Interrupted, tc.r.Interrupted)
			}
			if m := reTable.FindStringSubmatch(page[strings.Index(page, "<h2>Tenants"):]); tc.tenantRows > 0 {
				if m == nil || m[1] != "tenants" {
					t.Fatalf("no tenants table")
				}
				if got := len(reRow.FindAllString(m[2], -1)) - 1; got != tc.tenantRows {
					t.Errorf("%d tenant rows, want %d", got, tc.tenantRows)
				}
			}
			if tc.tenantsLeft != "" && !strings.Contains(page, tc.tenantsLeft) {
				t.Errorf("no note that %s are not all shown", tc.tenantsLeft)
			}
			// The PNGs beside the page are the charts it embeds.
			for _, name := range []string{"latency", "shares", "outcomes", "backend", "keys", "fairness"} {
				if dir == "" {
					break
				}
				b, err := os.ReadFile(filepath.Join(dir, name+".png"))
				if err != nil {
					t.Fatal(err)
				}
				if _, err := png.Decode(bytes.NewReader(b)); err != nil {
					t.Errorf("%s.png: %v", name, err)
				}
			}
			checkGolden(t, tc.name+".txt", structure(page))
		})
	}
}

func TestTenantsWorstFirst(t *testing.T) {
	r := &Results{Tenants: []TenantResult{
		{Name: "fine", Counts: Counts{Requests: 100, OK: 100}, Latency: Latency{P99: 900}},
		{Name: "slow", Counts: Counts{Requests: 100, OK: 100}, Latency: Latency{P99: 9000}},
		{Name: "half", Counts: Counts{Requests: 100, OK: 50, Rejected: 50}, Latency: Latency{P99: 10}},
		{Name: "idle"},
		{Name: "all-bad", Counts: Counts{Requests: 3, ClientTimeouts: 3}},
	}}
	v := newRunView(r, nil)
	var got []string
	for _, t := range v.Tenants {
		got = append(got, t.Name)
	}
	if want := "all-bad half slow fine idle"; strings.Join(got, " ") != want {
		t.Errorf("tenants ordered %v, want %s", got, want)
	}
}

func TestVerdict(t *testing.T) {
	for i, tc := range []struct {
		slos []SLOResult
		want verdictView
	}{
		{nil, verdictView{"none", "No SLOs were set for this scenario."}},
		{[]SLOResult{{Name: "a: p99 < 1s", Pass: true}}, verdictView{"pass", "The SLO passed."}},
		{[]SLOResult{{Name: "a: p99 < 1s", Pass: true}, {Name: "b: ok_rate >= 0.99", Pass: true}}, verdictView{"pass", "All 2 SLOs passed."}},
		{[]SLOResult{{Name: "other-sites: p99 < 1s", Value: 14200}, {Name: "b: ok_rate >= 0.99", Pass: true}}, verdictView{"fail", "1 of 2 SLOs failed: other-sites p99 < 1s (was 14.2 s)."}},
		{[]SLOResult{{Name: "g: p50 <= 200ms", Value: 250}, {Name: "g: rejected_rate < 0.05", Value: 0.125}},
			verdictView{"fail", "2 of 2 SLOs failed: g p50 <= 200ms (was 250 ms); g rejected_rate < 0.05 (was 12.5%)."}},
	} {
		if got := verdict(tc.slos); got != tc.want {
			t.Errorf("step %d: verdict = %+v, want %+v", i, got, tc.want)
		}
	}
}

func TestFormats(t *testing.T) {
	for i, tc := range []struct{ got, want string }{
		{fmtCount(999), "999"},
		{fmtCount(1234), "1234"},
		{fmtCount(12345), "12\u202f345"},
		{fmtCount(1234567), "1\u202f234\u202f567"},
		{fmtPct(0), "0%"},
		{fmtPct(0.0004), "<0.1%"},
		{fmtPct(0.9996), ">99.9%"},
		{fmtPct(1), "100%"},
		{fmtPct(0.125), "12.5%"},
		{FormatLatency(0.42), "0.42 ms"},
		{FormatLatency(38), "38 ms"},
		{FormatLatency(14200), "14.2 s"},
		{FormatLatency(150_000), "2.5 min"},
		{fmtSeconds(600), "10 min"},
		{fmtSeconds(6.2), "6.2 s"},
	} {
		if tc.got != tc.want {
			t.Errorf("step %d: got %q, want %q", i, tc.got, tc.want)
		}
	}
}

// BenchmarkRenderReport250 renders the whole report (charts, PNG files and
// the page) of a 250-tenant run. The target is under 2 s an operation.
func BenchmarkRenderReport250(b *testing.B) {
	r := synthResults(250)
	dir := b.TempDir()
	b.ReportAllocs()
	for b.Loop() {
		if err := RenderReport(dir, r); err != nil {
			b.Fatal(err)
		}
	}
}

// synthComparison returns a comparison of five limit settings, each point
// written as dir/limit-V/results.json with its report beside it, as
// stampede compare lays them out.
func synthComparison(t testing.TB, dir string) (*Comparison, []*Results) {
	values := []string{"off", "2", "4", "6", "8"}
	var pts []Point
	var rs []*Results
	for i, v := range values {
		r := synthResults(40)
		r.Settings = map[string]string{"proxy.limit_conn.per_key": v}
		// Tighter limits reject more of the noisy tenant and keep the
		// others fast; no limit lets the noisy tenant slow everyone.
		noisy, other := &r.Groups[0], &r.Groups[1]
		noisy.Rejected = uint64([]int{0, 90, 70, 40, 20}[i])
		noisy.OK = noisy.Requests - noisy.Rejected
		other.Latency.P99 = []float64{14200, 240, 380, 2100, 6400}[i]
		pass := other.Latency.P99 < 1000
		r.SLO = []SLOResult{{Name: "other-sites: p99 < 1s", Group: "other-sites", Metric: "p99", Op: "<", Pass: pass, Value: other.Latency.P99, Threshold: 1000}}
		rel := "limit-" + v + "/results.json"
		if dir != "" {
			// The point's own report is another test's business; a stand-in
			// is enough to follow the link.
			pd := filepath.Join(dir, "limit-"+v)
			if err := os.MkdirAll(pd, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(pd, "report.html"), []byte("<!DOCTYPE html><title>point</title>"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		pts = append(pts, NewPoint(Names{v}, rel, r))
		rs = append(rs, r)
	}
	// A fixed recommendation, so that this golden file follows the page
	// and not the recommendation's wording (compare_test.go tests that).
	return &Comparison{Schema: ComparisonSchema, Scenario: "stock-balance", Axis: Names{"proxy.limit_conn.per_key"}, Points: pts,
		Recommendation: Recommendation{Value: Names{"2"}, Passed: true, Reason: "per_key=2 passes every SLO (other-sites p99 240 ms < 1 s) and serves noisy best among passing points (30/120 ok)"}}, rs
}

func TestComparisonReportGolden(t *testing.T) {
	dir := t.TempDir()
	if *outDir != "" {
		dir = filepath.Join(*outDir, "comparison")
	}
	c, rs := synthComparison(t, dir)
	if err := RenderComparison(dir, c, rs, ComparisonOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	checkSelfContained(t, page)
	if !strings.Contains(page, `id="verdict">Use proxy.limit_conn.per_key = `) {
		t.Errorf("the verdict does not recommend a value: %s", reTag.FindString(page))
	}
	if got := len(reImg.FindAllString(page, -1)); got != 3 {
		t.Errorf("%d images, want 3", got)
	}
	links := reLink.FindAllStringSubmatch(page, -1)
	if len(links) != 10 { // in the table and in the list
		t.Errorf("%d links, want 10", len(links))
	}
	for _, l := range links {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(l[1]))); err != nil {
			t.Errorf("link %s: %v", l[1], err)
		}
	}
	checkGolden(t, "comparison.txt", structure(page))

	// An empty comparison still renders, saying so.
	empty := t.TempDir()
	if err := RenderComparison(empty, &Comparison{Scenario: "x", Axis: Names{"a.b"}}, nil, ComparisonOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(filepath.Join(empty, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "comparison-empty.txt", structure(string(b)))
}

func TestComparisonChartsDecode(t *testing.T) {
	c, rs := synthComparison(t, "")
	charts, err := comparisonCharts(c, rs, formatPNG|formatSVG)
	if err != nil {
		t.Fatal(err)
	}
	if len(charts) != 3 {
		t.Fatalf("%d charts, want 3", len(charts))
	}
	for _, ch := range charts {
		checkPNG(t, ch, 6, 0.01)
	}
	charts, err = comparisonCharts(&Comparison{}, nil, formatPNG|formatSVG)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range charts {
		checkPNG(t, ch, 3, 0.002)
	}
}

func TestPointReport(t *testing.T) {
	for i, tc := range []struct{ dir, results, want string }{
		{"out", "limit-4/results.json", "limit-4/report.html"},
		{"/tmp/out", "/tmp/out/p/limit-4/results.json", "p/limit-4/report.html"},
		{"out", "", ""},
	} {
		if got := pointReport(tc.dir, tc.results); got != tc.want {
			t.Errorf("step %d: pointReport(%q, %q) = %q, want %q", i, tc.dir, tc.results, got, tc.want)
		}
	}
}

func TestRunViewLiveEngineInfo(t *testing.T) {
	info := func(r *Results) map[string]string {
		m := map[string]string{}
		for _, e := range newRunView(r, nil).Info {
			m[e.Key] = e.Value
		}
		return m
	}
	if m := info(&Results{Engine: "sim"}); m["Tare"] != "" || m["Send lateness"] != "" {
		t.Errorf("sim run: tare %q, send lateness %q; want neither", m["Tare"], m["Send lateness"])
	}
	m := info(&Results{Engine: "live", TareMS: 0.412, SendLateness: &SendLateness{Sends: 100, Early: 49, P50: -0.001, P99: 0.5, Max: 4.2}})
	if want := "0.412 ms of wall time taken off every latency"; m["Tare"] != want {
		t.Errorf("tare %q, want %q", m["Tare"], want)
	}
	if want := "p50 -0.001 ms, p99 0.500 ms, max 4.200 ms of wall time; 49 of 100 sends early"; m["Send lateness"] != want {
		t.Errorf("send lateness %q, want %q", m["Send lateness"], want)
	}
}
