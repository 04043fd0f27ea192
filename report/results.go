// Package report records results (HdrHistograms and time series) and renders
// them: results.json, HDR interval logs, PNG/SVG charts, one self-contained
// HTML report, comparisons and SLO verdicts.
package report

// This file fixes the results.json contract (DESIGN.md, schema
// stampede.results/v1) that the engines and the CLI are written against.

// Schema is the value of results.json's "schema".
const Schema = "stampede.results/v1"

// ComparisonSchema is the value of comparison.json's "schema".
const ComparisonSchema = "stampede.comparison/v1"

// Counts are the outcome counts of one set of requests.
type Counts struct {
	Requests        uint64            `json:"requests"`
	OK              uint64            `json:"ok"`
	Rejected        uint64            `json:"rejected"`
	BackendErrors   uint64            `json:"backend_errors"`
	GatewayTimeouts uint64            `json:"gateway_timeouts"`
	ClientTimeouts  uint64            `json:"client_timeouts"`
	Dropped         uint64            `json:"dropped"`
	Errors          uint64            `json:"errors"`
	Status          map[string]uint64 `json:"status"`
}

// Latency summarises ok responses' latency in model-time milliseconds.
type Latency struct {
	Count uint64  `json:"count"`
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// GroupResult is one tenant group's counts and latency.
type GroupResult struct {
	Name    string `json:"name"`
	Tenants int    `json:"tenants"`
	Counts
	Latency Latency `json:"latency_ms"`
}

// TenantResult is one tenant's counts and latency.
type TenantResult struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	Host  string `json:"host"`
	Counts
	Latency Latency `json:"latency_ms"`
}

// RouteResult is one route's counts and latency.
type RouteResult struct {
	Name string `json:"name"`
	Counts
	Latency Latency `json:"latency_ms"`
}

// BackendResult summarises the backend's workers over the run.
type BackendResult struct {
	Workers     int     `json:"workers"`
	BusyMax     int     `json:"busy_max"`
	QueueMax    int     `json:"queue_max"`
	Utilization float64 `json:"utilization"` // busy worker time / (workers × model duration)
}

// SLOResult is one objective's verdict.
type SLOResult struct {
	Name      string  `json:"name"` // "other-sites: p99 < 1s"
	Pass      bool    `json:"pass"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
}

// Results is results.json.
type Results struct {
	Schema         string            `json:"schema"`
	Scenario       string            `json:"scenario"`
	Engine         string            `json:"engine"`
	TimeScale      float64           `json:"time_scale"`
	ModelDurationS float64           `json:"model_duration_s"`
	WallDurationS  float64           `json:"wall_duration_s"`
	Interrupted    bool              `json:"interrupted"`
	Settings       map[string]string `json:"settings"`
	Totals         Counts            `json:"totals"`
	Groups         []GroupResult     `json:"groups"`
	Tenants        []TenantResult    `json:"tenants"`
	Routes         []RouteResult     `json:"routes"`
	Backend        BackendResult     `json:"backend"`
	SLO            []SLOResult       `json:"slo"`

	// Beyond the v1 contract: what makes a report reproducible and lets
	// shards merge exactly. Readers of v1 ignore unknown fields.
	Seed        uint64     `json:"seed"`
	Version     string     `json:"version,omitempty"`
	CommandLine string     `json:"command_line,omitempty"`
	Series      *Series    `json:"series,omitempty"`
	Histograms  *Snapshots `json:"histograms,omitempty"`
}
