package report

// This file holds results.json: its types, and reading and writing it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"

	"stampede/workload"
)

// This file holds the results.json contract (DESIGN.md, schema
// stampede.results/v1) that the engines and the CLI are written against.

// Schema is the value of results.json's "schema".
const Schema = "stampede.results/v1"

// ComparisonSchema is the value of comparison.json's "schema".
const ComparisonSchema = "stampede.comparison/v1"

// Counts are the outcome counts of one set of requests.
//
// Status counts the HTTP statuses that came back; a request that got no
// status at all (a client timeout, a dropped arrival, a transport error) is
// counted by its outcome only, so the statuses may sum to less than Requests.
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
	// WorkS is the worker time its tenants' requests used, as TenantResult.
	WorkS   float64 `json:"work_s,omitempty"`
	Latency Latency `json:"latency_ms"`
}

// TenantResult is one tenant's counts and latency.
type TenantResult struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	Host  string `json:"host"`
	Counts
	// WorkS is the backend worker time, model seconds to the microsecond,
	// the tenant's requests used: the sum of their workload.Result.Work.
	// Beyond the v1 contract; zero (left out) when the engine knew none,
	// and in live runs it covers ok responses only.
	WorkS   float64 `json:"work_s,omitempty"`
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
//
// Value and Threshold are milliseconds for latency metrics and fractions
// (0..1) for rates. Group, Metric and Op repeat the objective so that a
// verdict can be evaluated again from results.json alone (merging shards);
// Reason says why an objective failed without a measurement.
type SLOResult struct {
	Name      string  `json:"name"` // "other-sites: p99 < 1s"
	Pass      bool    `json:"pass"`
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`

	Group  string `json:"group"`
	Metric string `json:"metric"`
	Op     string `json:"op"`
	Reason string `json:"reason,omitempty"` // "no requests", "no ok responses", "no such group"
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
	// Validity says whether the run played its scenario faithfully enough
	// for its SLO verdicts to mean something; nil in results written
	// before it existed.
	Validity *Validity `json:"validity,omitempty"`
	// TimeScaleAuto says the live engine chose TimeScale itself
	// (time_scale: auto) from a calibration on this machine.
	TimeScaleAuto bool `json:"time_scale_auto,omitempty"`

	// Beyond the v1 contract: what makes a report reproducible and lets
	// shards merge exactly. Readers of v1 ignore unknown fields.
	Seed        uint64 `json:"seed"`
	Version     string `json:"version,omitempty"`
	CommandLine string `json:"command_line,omitempty"`
	// StartUnixMS is the wall-clock moment the run began, in milliseconds
	// since the Unix epoch: the StartTime and BaseTime of histograms.hlog.
	// Zero (left out) when the engine did not say.
	StartUnixMS int64 `json:"start_unix_ms,omitempty"`
	// TareMS is the wall time, in ms, of a request through the live path
	// that does no work: the mean of the tares the live engine took off
	// during the run, each estimated from the probes it had just sent
	// through that path.
	TareMS float64 `json:"tare_wall_ms,omitempty"`
	// SendLateness says how far behind its schedule the live engine's
	// generator sent, in wall ms; nil for the sim.
	SendLateness *SendLateness `json:"send_lateness_wall_ms,omitempty"`
	Shards       int           `json:"shards,omitempty"` // results merged into these; 0 for one run
	// RunID names the run that several shards play (--run-id, or derived
	// from the scenario, its settings and the start time); Shard says which
	// shard of it these results are. Empty and nil for a run played whole.
	RunID string     `json:"run_id,omitempty"`
	Shard *ShardInfo `json:"shard,omitempty"`
	// StartAt is the wall time the run was told to start (--start-at),
	// RFC 3339; empty when it started when it was launched.
	StartAt    string     `json:"start_at,omitempty"`
	Series     *Series    `json:"series,omitempty"`
	Histograms *Snapshots `json:"histograms,omitempty"`

	// hists are the groups' histograms as the Recorder or a merge built
	// them, so that the charts need not decode every tenant's snapshot
	// again; nil for results read from a file.
	hists *groupHists
	// passed are the requests limit_req passed on and delayed per tenant
	// over time, for the tenants it delayed most, as the Recorder saw
	// them; nil without limit_req and for results read from a file (the
	// contract of results.json does not carry them).
	passed []passedSeries
}

// passedSeries is one tenant's requests limit_req passed on per model
// second in each series bucket, and those of them it delayed first.
type passedSeries struct {
	tenant, host    string
	passed, delayed []float64
	delayedTotal    uint64
}

// Validity is the live engine's verdict on its own run, apart from the SLO
// verdicts: whether the generator's own delays (send lateness, stalls, the
// tare's drift) were small enough that they cannot explain an SLO result.
// A sim run is always conclusive. Figures are model-time milliseconds unless
// their name says wall.
type Validity struct {
	Conclusive bool     `json:"conclusive"`
	Reasons    []string `json:"reasons"` // why not, in figures; empty when conclusive
	// SuggestedTimeScale is the time_scale this machine can hold for the
	// scenario, judged from this run's figures: the run's own when it was
	// conclusive. Zero for the sim, which has none.
	SuggestedTimeScale float64 `json:"suggested_time_scale,omitempty"`
	// Unexplained names the failed SLOs of an inconclusive run that the
	// generator's delay cannot explain (they failed by far more than it):
	// those still fail the run.
	Unexplained []string `json:"unexplained_failures,omitempty"`

	// BudgetMS is the delay the generator may have: a tenth of the
	// tightest latency SLO (see the README's "Live and simulated runs").
	BudgetMS       float64 `json:"delay_budget_ms,omitempty"`
	LatenessP99MS  float64 `json:"lateness_p99_ms,omitempty"`  // send lateness at p99
	LongestStallMS float64 `json:"longest_stall_ms,omitempty"` // the longest stall of the generator
	// StallsOverBudget is how many stalls were longer than BudgetMS.
	StallsOverBudget int `json:"stalls_over_budget,omitempty"`
	// TimersP99MS is how late the process's precise timers woke at p99.
	TimersP99MS float64 `json:"timers_late_p99_ms,omitempty"`
	TareDriftMS float64 `json:"tare_drift_ms,omitempty"` // the tare's highest less its lowest during the run
	// CPUSteal is the share of the machine's CPU time a hypervisor gave
	// to others during the run (/proc/stat); CgroupThrottled is how many
	// times the cgroup's CPU quota stopped the process, for
	// CgroupThrottledWallMS in all.
	CPUSteal              float64 `json:"cpu_steal,omitempty"`
	CgroupThrottled       uint64  `json:"cgroup_throttled,omitempty"`
	CgroupThrottledWallMS float64 `json:"cgroup_throttled_wall_ms,omitempty"`
	// CPUPerRequestUS is the CPU time the process spent per request sent,
	// in wall microseconds: generator, proxy and backend together for
	// the built-in pair.
	CPUPerRequestUS float64 `json:"cpu_per_request_us,omitempty"`
}

// SendLateness is workload.Lateness in results.json: when the live
// generator sent against when it meant to, in wall milliseconds. Negative
// values are early sends, from which latency counts instead.
type SendLateness struct {
	Sends uint64  `json:"sends"`
	Early uint64  `json:"early"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

// Passed reports whether every SLO passed. A run without SLOs passes.
func (r *Results) Passed() bool {
	return !slices.ContainsFunc(r.SLO, func(s SLOResult) bool { return !s.Pass })
}

// Group returns the group named name, or nil.
func (r *Results) Group(name string) *GroupResult { return groupNamed(r.Groups, name) }

// groupNamed returns the first of groups named name, or nil.
func groupNamed(groups []GroupResult, name string) *GroupResult {
	i := slices.IndexFunc(groups, func(g GroupResult) bool { return g.Name == name })
	if i < 0 {
		return nil
	}
	return &groups[i]
}

// ErrNotResults is wrapped by ReadResults and DecodeResults when the input
// is JSON but not a stampede.results/v1 document.
var ErrNotResults = errors.New("not a " + Schema + " document")

// WriteJSON writes r as indented JSON. The output is deterministic: the same
// Results give byte-identical output (struct fields in declaration order,
// map keys sorted, nil maps and slices written as {} and []). r is not
// modified.
func WriteJSON(w io.Writer, r *Results) error {
	c := normalized(r)
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding results of %q: %w", r.Scenario, err)
	}
	b = append(b, '\n')
	_, err = w.Write(b)
	return err
}

// normalized returns a shallow copy of r in which every map and slice the
// contract lists is non-nil, so the JSON never holds null where a reader
// expects an object or a list.
func normalized(r *Results) *Results {
	c := *r
	if c.Schema == "" {
		c.Schema = Schema
	}
	if c.Settings == nil {
		c.Settings = map[string]string{}
	}
	c.Totals = normCounts(c.Totals)
	c.Groups = append([]GroupResult{}, c.Groups...)
	for i := range c.Groups {
		c.Groups[i].Counts = normCounts(c.Groups[i].Counts)
	}
	c.Tenants = append([]TenantResult{}, c.Tenants...)
	for i := range c.Tenants {
		c.Tenants[i].Counts = normCounts(c.Tenants[i].Counts)
	}
	c.Routes = append([]RouteResult{}, c.Routes...)
	for i := range c.Routes {
		c.Routes[i].Counts = normCounts(c.Routes[i].Counts)
	}
	c.SLO = append([]SLOResult{}, c.SLO...)
	if c.Validity != nil && c.Validity.Reasons == nil {
		v := *c.Validity
		v.Reasons = []string{}
		c.Validity = &v
	}
	if c.Series != nil {
		s := *c.Series
		s.Groups = append([]GroupSeries{}, s.Groups...)
		for i := range s.Groups {
			if s.Groups[i].Counts == nil {
				s.Groups[i].Counts = [][workload.NumOutcomes]uint32{}
			}
		}
		if s.Backend == nil {
			s.Backend = []BackendSample{}
		}
		if s.Keys == nil {
			s.Keys = []KeySeries{}
		}
		c.Series = &s
	}
	return &c
}

func normCounts(c Counts) Counts {
	if c.Status == nil {
		c.Status = map[string]uint64{}
	}
	return c
}

// ReadResults reads a results.json file. Errors name the file; a file that
// is JSON but not stampede.results/v1 gives an error wrapping ErrNotResults.
func ReadResults(path string) (*Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading results: %w", err)
	}
	r, err := DecodeResults(b)
	if err != nil {
		return nil, fmt.Errorf("reading results %s: %w", path, err)
	}
	return r, nil
}

// DecodeResults parses a results.json document and checks its schema.
func DecodeResults(b []byte) (*Results, error) {
	var probe struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotResults, err)
	}
	if probe.Schema == nil {
		return nil, fmt.Errorf("%w: no \"schema\" field", ErrNotResults)
	}
	if *probe.Schema != Schema {
		return nil, fmt.Errorf("%w: schema is %q", ErrNotResults, *probe.Schema)
	}
	var r Results
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotResults, err)
	}
	if r.Settings == nil {
		r.Settings = map[string]string{}
	}
	return &r, nil
}

// statusKey returns the results.json key of an HTTP status. The common
// statuses are preformatted so that building results does not format them.
func statusKey(code int) string {
	if code >= 0 && code < len(statusKeys) {
		return statusKeys[code]
	}
	return strconv.Itoa(code)
}

var statusKeys = func() []string {
	s := make([]string, 600)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}()

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
