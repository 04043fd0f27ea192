package report

// This file holds the outcome and status counts the recorder keeps per
// tenant and route.

import "stampede/workload"

// tally counts one set of requests by outcome and HTTP status.
type tally struct {
	n      [numOutcomes]uint64
	status []statusCount // few distinct statuses: a linear scan beats a map
}

type statusCount struct {
	code int16
	n    uint64
}

func (t *tally) add(o workload.Outcome, code int16) {
	t.n[o]++
	if code == 0 {
		return
	}
	for i := range t.status {
		if t.status[i].code == code {
			t.status[i].n++
			return
		}
	}
	t.status = append(t.status, statusCount{code, 1})
}

func (t *tally) merge(o *tally) {
	for i, n := range o.n {
		t.n[i] += n
	}
next:
	for _, s := range o.status {
		for i := range t.status {
			if t.status[i].code == s.code {
				t.status[i].n += s.n
				continue next
			}
		}
		t.status = append(t.status, s)
	}
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
		Status:          make(map[string]uint64, len(t.status)),
	}
	for _, n := range t.n {
		c.Requests += n
	}
	for _, s := range t.status {
		c.Status[statusKey(int(s.code))] += s.n
	}
	return c
}
