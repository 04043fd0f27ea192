package report

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// chromiumPath returns the browser to drive, skipping the test when there is
// none, unless STAMPEDE_REQUIRE_CHROMIUM=1 makes that a failure.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("STAMPEDE_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium is not installed and STAMPEDE_REQUIRE_CHROMIUM=1 requires it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium); set STAMPEDE_REQUIRE_CHROMIUM=1 to make this a failure")
	return ""
}

// pageProblems collects what a page must not do: console errors, uncaught
// exceptions, browser log errors and network requests.
type pageProblems struct {
	mu       sync.Mutex
	problems []string
}

func (p *pageProblems) add(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.problems = append(p.problems, fmt.Sprintf(format, args...))
}

func (p *pageProblems) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.problems...)
}

// listen records p's problems from the events of the tab. It runs on the
// tab's reading goroutine, so it only records.
func (p *pageProblems) listen(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			p.add("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		p.add("uncaught exception: %s", ev.ExceptionDetails.Text)
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError {
			p.add("log error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		if u := ev.Request.URL; !strings.HasPrefix(u, "file:") && !strings.HasPrefix(u, "data:") {
			p.add("network request: %.120s", u)
		}
	case *network.EventLoadingFailed:
		p.add("loading failed: %s (%s)", ev.ErrorText, ev.Type)
	}
}

// imageState is what the page says of one <img>.
type imageState struct {
	Alt      string `json:"alt"`
	Complete bool   `json:"complete"`
	Width    int    `json:"width"`
	Height   int    `json:"height"`
}

// checkPage opens file in a new tab of browser with the network off and
// checks it: no console errors, no request, every image decoded, the verdict
// text present. It saves a full-page screenshot as shot.
func checkPage(t *testing.T, browser context.Context, file, verdict, shot string, wantLive []string) {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	var probs pageProblems
	if err := chromedp.Listen(ctx, probs.listen); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	offline := chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return fmt.Errorf("network.enable: %w", err)
		}
		if _, err := cdp.Call(ctx, tg, log.Enable, cdp.Empty{}); err != nil {
			return fmt.Errorf("log.enable: %w", err)
		}
		_, err := cdp.Call(ctx, tg, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}},
		})
		if err != nil {
			return fmt.Errorf("taking the network offline: %w", err)
		}
		_, err = cdp.Call(ctx, tg, network.OverrideNetworkState, network.OverrideNetworkStateParams{Offline: true, DownloadThroughput: -1, UploadThroughput: -1})
		return err
	})
	u := url.URL{Scheme: "file", Path: file}
	if err := chromedp.Do(ctx, offline, chromedp.Navigate(u.String()), chromedp.WaitReady("body")); err != nil {
		t.Fatalf("opening %s: %v", u.String(), err)
	}
	imgs, err := chromedp.Run(ctx, chromedp.Evaluate[[]imageState](
		`Array.from(document.images, i => ({alt: i.alt, complete: i.complete, width: i.naturalWidth, height: i.naturalHeight}))`))
	if err != nil {
		t.Fatalf("listing images: %v", err)
	}
	if len(imgs) == 0 && len(wantLive) == 0 {
		t.Errorf("%s: no images", file)
	}
	for _, im := range imgs {
		if !im.Complete || im.Width <= 0 || im.Height <= 0 {
			t.Errorf("%s: image %q did not load: complete=%v natural size %dx%d", file, im.Alt, im.Complete, im.Width, im.Height)
		}
	}
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("verdict").textContent`))
	if err != nil {
		t.Fatalf("reading the verdict: %v", err)
	}
	if !strings.Contains(text, verdict) {
		t.Errorf("%s: verdict %q, want it to contain %q", file, text, verdict)
	}
	checkLiveCharts(t, ctx, file, wantLive)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // 100 gives a PNG, less a JPEG
	if err != nil {
		t.Fatalf("taking a screenshot: %v", err)
	}
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot of %s: %s (%d bytes)", filepath.Base(filepath.Dir(file)), shot, len(png))
	for _, p := range probs.list() {
		t.Errorf("%s: %s", file, p)
	}
}

// liveState is what the page says of one interactive chart after the test
// hovered over its middle and dragged across its middle third.
type liveState struct {
	ID     string     `json:"id"`
	Drawn  bool       `json:"drawn"`  // uPlot made its canvas, of some size
	Series int        `json:"series"` // lines, the x series not counted
	Hover  []string   `json:"hover"`  // the legend's values at the cursor
	Before [2]float64 `json:"before"` // the x range before the drag
	After  [2]float64 `json:"after"`  // and after
	Synced bool       `json:"synced"` // every chart of its sync key took the new range
}

// liveCheck hovers and zooms each interactive chart with real mouse events
// on uPlot's overlay, waiting a frame for it to draw.
const liveCheck = `(async () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const out = [];
  for (const el of document.querySelectorAll(".ichart")) {
    const u = el.uplot, st = {id: el.id, drawn: false, series: 0, hover: [], before: [0, 0], after: [0, 0], synced: true};
    out.push(st);
    if (!u) continue;
    const cv = el.querySelector("canvas");
    st.drawn = !!cv && cv.width > 100 && cv.height > 100;
    st.series = u.series.length - 1;
    const r = u.over.getBoundingClientRect(), y = r.top + r.height / 2;
    // movementX: uPlot ignores a still mouse while a button is down.
    const ev = (type, x, target) => (target || u.over).dispatchEvent(new MouseEvent(type, {clientX: x, clientY: y, movementX: 5, bubbles: true, button: 0, buttons: type === "mouseup" ? 0 : 1}));
    u.over.dispatchEvent(new MouseEvent("mouseenter", {clientX: r.left + r.width / 2, clientY: y}));
    u.over.dispatchEvent(new MouseEvent("mousemove", {clientX: r.left + r.width / 2, clientY: y, bubbles: true}));
    await frame();
    st.hover = Array.from(el.querySelectorAll(".u-legend .u-series .u-value"), e => e.textContent);
    st.before = [u.scales.x.min, u.scales.x.max];
    ev("mousemove", r.left + r.width / 3);
    await frame();
    ev("mousedown", r.left + r.width / 3);
    await frame();
    ev("mousemove", r.left + r.width / 2);
    await frame();
    ev("mousemove", r.left + 2 * r.width / 3);
    await frame();
    ev("mouseup", r.left + 2 * r.width / 3, document);
    await frame();
    st.after = [u.scales.x.min, u.scales.x.max];
    for (const o of document.querySelectorAll(".ichart")) {
      const key = u.cursor.sync && u.cursor.sync.key, okey = o.uplot && o.uplot.cursor.sync && o.uplot.cursor.sync.key;
      if (o !== el && key && typeof key === "string" && okey === key &&
          (o.uplot.scales.x.min !== u.scales.x.min || o.uplot.scales.x.max !== u.scales.x.max)) st.synced = false;
    }
    u.over.dispatchEvent(new MouseEvent("dblclick", {bubbles: true})); // zoom back out
    await frame();
  }
  return out;
})()`

// checkLiveCharts checks that the page's interactive charts are the ones
// wanted, drawn, that hovering shows values and that dragging zooms in.
func checkLiveCharts(t *testing.T, ctx context.Context, file string, want []string) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]liveState](liveCheck, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: checking the interactive charts: %v", file, err)
	}
	var ids []string
	for _, st := range got {
		ids = append(ids, strings.TrimPrefix(st.ID, "ichart-"))
		if !st.Drawn || st.Series == 0 {
			t.Errorf("%s: chart %s: drawn %v with %d series, want drawn with some", file, st.ID, st.Drawn, st.Series)
			continue
		}
		shown := 0
		for _, v := range st.Hover {
			if v != "" && v != "—" && v != "--" {
				shown++
			}
		}
		if shown == 0 {
			t.Errorf("%s: chart %s: hovering shows no value (legend %q)", file, st.ID, st.Hover)
		}
		if !(st.After[0] > st.Before[0] && st.After[1] < st.Before[1]) {
			t.Errorf("%s: chart %s: dragging across the middle third took x from %v to %v, want a narrower range inside it", file, st.ID, st.Before, st.After)
		}
		if !st.Synced {
			t.Errorf("%s: chart %s: the charts sharing its time axis did not take its zoom", file, st.ID)
		}
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("%s: interactive charts %v, want %v", file, ids, want)
	}
}

// TestReportsInBrowser opens a run's report and a comparison's report in
// headless chromium from file://, with the network off.
func TestReportsInBrowser(t *testing.T) {
	exe := chromiumPath(t)
	dir := t.TempDir()
	if *outDir != "" {
		dir = filepath.Join(*outDir, "browser")
	}
	run := filepath.Join(dir, "run")
	charts, err := synthCharts() // drawn once for all tests: slow under -race
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(run, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeReport(f, synthResults(250), charts); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cmpDir := filepath.Join(dir, "comparison")
	c, rs := synthComparison(t, cmpDir)
	if err := RenderComparison(cmpDir, c, rs, ComparisonOptions{}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Belt and braces with the offline emulation: a proxy that is not
		// there, for everything but loopback.
		chromedp.ProxyServer("127.0.0.1:9"),
		chromedp.WindowSize(1280, 900),
	)
	defer cancelAlloc()
	browser, cancelBrowser := chromedp.NewContext(alloc)
	defer cancelBrowser()
	if err := chromedp.Do(browser); err != nil { // start the browser
		t.Fatalf("starting %s: %v", exe, err)
	}

	shots := t.TempDir()
	if *outDir != "" {
		shots = dir
	}
	checkPage(t, browser, filepath.Join(run, "report.html"), "1 of 2 SLOs failed: other-sites p99 < 1s", filepath.Join(shots, "run.png"),
		[]string{"latency-time", "outcomes-1", "outcomes-0"})
	checkPage(t, browser, filepath.Join(cmpDir, "report.html"), "Use proxy.limit_conn.per_key = 2.", filepath.Join(shots, "comparison.png"),
		[]string{"compare-p99", "compare-ok", "compare-rejected"})
}
