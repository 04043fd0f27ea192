package report

// This file holds the outcome and status counts the recorder keeps per
// tenant and route.

import "stampede/workload"

// tally counts one set of requests by outcome and HTTP status. It is 64
// bytes, one cache line, so that a fleet's tallies cost one miss per
// result: the statuses live apart, in a statusTable that most tenants
// share (see statusTable).
type tally struct {
	n      [numOutcomes]uint64
	status *statusTable // nil until the first result
}

// statusTable says which status the results of each outcome of a tally
// carried: the usual one of the outcome, or one of the odd counts. A
// recorder's tenants share one table until a tenant's result differs from
// the usual status of its outcome, which in practice no result does (ok is
// 200, a rejection the proxy's status), so that counting statuses costs a
// fleet nothing per result.
type statusTable struct {
	shared bool
	set    [numOutcomes]bool
	usual  [numOutcomes]int16
	odd    []oddCount // few: a linear scan beats a map
}

// oddCount counts the results of an outcome that carried a status other
// than the outcome's usual one.
type oddCount struct {
	o    workload.Outcome
	code int16
	n    uint64
}

// statusCount is a number of results of one status, in counts and merge.
type statusCount struct {
	code int16
	n    uint64
}

func (t *tally) add(o workload.Outcome, code int16) {
	t.n[o]++
	if st := t.status; st != nil && st.set[o] && st.usual[o] == code {
		return
	}
	t.note(o, code, 1)
}

// note records that k of the results of outcome o, already counted in n,
// carried status code.
func (t *tally) note(o workload.Outcome, code int16, k uint64) {
	st := t.status
	if st != nil && st.set[o] && st.usual[o] == code {
		return
	}
	if st == nil {
		st = &statusTable{}
		t.status = st
	}
	if st.shared {
		// No tally sharing the table has had a result of o yet: every
		// one would have set its usual status.
		if !st.set[o] && t.n[o] == k {
			st.set[o], st.usual[o] = true, code
			return
		}
		own := &statusTable{set: st.set, usual: st.usual}
		st = own
		t.status = own
	}
	if !st.set[o] && t.n[o] == k {
		st.set[o], st.usual[o] = true, code
		return
	}
	for i := range st.odd {
		if c := &st.odd[i]; c.o == o && c.code == code {
			c.n += k
			return
		}
	}
	st.odd = append(st.odd, oddCount{o, code, k})
}

// statuses calls f with the number of results of each status and
// outcome, some of them zero.
func (t *tally) statuses(f func(o workload.Outcome, code int16, n uint64)) {
	st := t.status
	if st == nil {
		return
	}
	var odd [numOutcomes]uint64
	for _, c := range st.odd {
		odd[c.o] += c.n
		f(c.o, c.code, c.n)
	}
	for o, n := range t.n {
		if st.set[o] {
			f(workload.Outcome(o), st.usual[o], n-odd[o])
		}
	}
}

func (t *tally) merge(o *tally) {
	for i, n := range o.n {
		t.n[i] += n
	}
	o.statuses(func(oc workload.Outcome, code int16, n uint64) {
		if n > 0 {
			t.note(oc, code, n)
		}
	})
}

func (t *tally) counts() Counts {
	c := Counts{
		OK:              t.n[workload.OK],
		Rejected:        t.n[workload.Rejected],
		BackendErrors:   t.n[workload.BackendError],
		GatewayTimeouts: t.n[workload.GatewayTimeout],
		ClientTimeouts:  t.n[workload.ClientTimeout],
		Dropped:         t.n[workload.Dropped],
		Errors:          t.n[workload.Error],
	}
	for _, n := range t.n {
		c.Requests += n
	}
	var status []statusCount
	t.statuses(func(_ workload.Outcome, code int16, n uint64) {
		if code == 0 || n == 0 {
			return
		}
		for i := range status {
			if status[i].code == code {
				status[i].n += n
				return
			}
		}
		status = append(status, statusCount{code, n})
	})
	c.Status = make(map[string]uint64, len(status))
	for _, s := range status {
		c.Status[statusKey(int(s.code))] += s.n
	}
	return c
}
