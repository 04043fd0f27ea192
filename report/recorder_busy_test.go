package report

import (
	"testing"
	"time"

	"stampede/workload"
)

// TestRecorderBusyDropped checks that the tenants' in-flight time, which
// only the hosts' series reads, is kept while no key was sampled and
// dropped once one was, in Add and in Merge alike, and that the series
// drawn are the same either way.
func TestRecorderBusyDropped(t *testing.T) {
	keyed := func() *Recorder {
		r := NewRecorder(recScenario())
		r.SampleKeys(time.Second, map[string]int{"site1.example.com": 2})
		return r
	}
	add := func(r *Recorder) *Recorder {
		for _, res := range miniRun() {
			r.Add(&res)
		}
		return r
	}
	plain := add(NewRecorder(recScenario()))
	if plain.tBusy == nil || len(plain.tBusy[0]) == 0 {
		t.Fatalf("without keys: tBusy = %v, want tenant 0's in-flight time", plain.tBusy)
	}
	if hosts := plain.Results(RunInfo{Engine: "sim"}).Series.Hosts; len(hosts) == 0 {
		t.Errorf("without keys: no host series")
	}
	withKeys := add(keyed())
	if withKeys.tBusy != nil {
		t.Errorf("after a key sample: tBusy holds %d tenants, want nil", len(withKeys.tBusy))
	}
	res := withKeys.Results(RunInfo{Engine: "sim"})
	if len(res.Series.Keys) == 0 || len(res.Series.Hosts) != 0 {
		t.Errorf("after a key sample: %d key series and %d host series, want some and none", len(res.Series.Keys), len(res.Series.Hosts))
	}
	for _, tc := range []struct {
		name       string
		into, from *Recorder
	}{
		{"keyed into plain", add(NewRecorder(recScenario())), add(keyed())},
		{"plain into keyed", add(keyed()), add(NewRecorder(recScenario()))},
	} {
		tc.into.Merge(tc.from)
		if tc.into.tBusy != nil {
			t.Errorf("%s: tBusy holds %d tenants, want nil", tc.name, len(tc.into.tBusy))
		}
		if got, want := tc.into.ten[0].tally.n[workload.OK], 2*plain.ten[0].tally.n[workload.OK]; got != want {
			t.Errorf("%s: tenant 0 ok = %d, want %d", tc.name, got, want)
		}
	}
	twice := add(NewRecorder(recScenario()))
	twice.Merge(plain)
	for b, v := range plain.tBusy[0] {
		if got := twice.tBusy[0][b]; got != 2*v {
			t.Fatalf("plain into plain: tenant 0 bucket %d in flight %v s, want %v", b, got, 2*v)
		}
	}
}

// TestGrowBusy checks that a tenant's in-flight series grows with zeros
// and takes no more room than the planned buckets while it is within them.
func TestGrowBusy(t *testing.T) {
	sc := recScenario()
	sc.Duration = 10 * time.Minute
	r := NewRecorder(sc)
	var busy []float32
	for step, n := range []int{1, 64, 65, 300, 600, 601, 1500} {
		busy = r.growBusy(busy, n)
		if len(busy) != n {
			t.Fatalf("step %d: len %d, want %d", step, len(busy), n)
		}
		if n <= r.planned && cap(busy) > r.planned {
			t.Errorf("step %d: %d buckets in room for %d, more than the %d planned", step, n, cap(busy), r.planned)
		}
		for b, v := range busy {
			if v != 0 && b != 0 {
				t.Fatalf("step %d: bucket %d = %v, want 0", step, b, v)
			}
		}
		busy[0] = 1
		if busy = r.growBusy(busy, n); busy[0] != 1 {
			t.Fatalf("step %d: bucket 0 = %v after growing in place, want 1", step, busy[0])
		}
	}
}
