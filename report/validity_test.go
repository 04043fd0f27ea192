package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"stampede/workload"
)

// TestValidityBanner checks that an inconclusive run opens its summary and
// its HTML report with the reasons and the time scale this machine can
// hold, and that a conclusive one has no banner.
func TestValidityBanner(t *testing.T) {
	v := &Validity{Reasons: []string{"the generator stalled 3 times for longer than the delay budget of 100 ms"}, SuggestedTimeScale: 0.1}
	for i, c := range []struct {
		validity *Validity
		banner   bool
	}{{nil, false}, {v, true}} {
		res := record(recScenario(), miniRun()).Results(RunInfo{Engine: "live", Validity: c.validity,
			SendLateness: workload.Lateness{Sends: 10, P99: 3 * time.Millisecond}, Backend: statsOf(8, 8, 3, 0)})
		var sum bytes.Buffer
		if err := WriteSummary(&sum, res); err != nil {
			t.Fatal(err)
		}
		var html bytes.Buffer
		if err := writeHTML(&html, res); err != nil {
			t.Fatal(err)
		}
		s, h := sum.String(), html.String()
		if got := strings.HasPrefix(s, "INCONCLUSIVE: "); got != c.banner {
			t.Errorf("step %d: summary starts with the banner: %v, want %v\n%s", i, got, c.banner, s)
		}
		if got := strings.Contains(h, `id="validity"`); got != c.banner {
			t.Errorf("step %d: report.html has the banner: %v, want %v", i, got, c.banner)
		}
		if !c.banner {
			continue
		}
		for _, want := range []string{v.Reasons[0], "--set time_scale=0.1"} {
			if !strings.Contains(s, want) || !strings.Contains(h, want) {
				t.Errorf("step %d: summary or report.html lacks %q", i, want)
			}
		}
		if strings.Index(h, `id="validity"`) > strings.Index(h, `id="verdict"`) {
			t.Errorf("step %d: the banner comes after the SLO verdict, want it first", i)
		}
		if strings.Contains(s, "warning: the generator sent") {
			t.Errorf("step %d: the summary repeats the lateness warning under the banner", i)
		}
	}
}
