package report

// This file holds the outcome and status counts the recorder keeps per
// tenant and route.

import (
	"slices"

	"stampede/workload"
)

// tallyStatuses is how many distinct statuses a tally counts in place,
// beside its outcomes: a tenant's results carry few (200, the limit's 503,
// 502, 504), and in place they cost Add no cache line of their own.
const tallyStatuses = 4

// tally counts one set of requests by outcome and HTTP status.
type tally struct {
	n     [numOutcomes]uint64
	codes [tallyStatuses]int16  // the statuses counted in place; 0 marks a free one
	ns    [tallyStatuses]uint64 // their requests
	more  []statusCount         // statuses past those; a linear scan beats a map
}

type statusCount struct {
	code int16
	n    uint64
}

func (t *tally) add(o workload.Outcome, code int16) {
	t.n[o]++
	if code != 0 {
		t.addStatus(code, 1)
	}
}

// addStatus adds n requests of status code, which is not 0.
func (t *tally) addStatus(code int16, n uint64) {
	for i, c := range t.codes {
		switch c {
		case code:
			t.ns[i] += n
			return
		case 0:
			t.codes[i], t.ns[i] = code, n
			return
		}
	}
	for i := range t.more {
		if t.more[i].code == code {
			t.more[i].n += n
			return
		}
	}
	t.more = append(t.more, statusCount{code, n})
}

// clone returns a copy of t that shares nothing with it, to merge into.
func (t *tally) clone() tally {
	c := *t
	c.more = slices.Clone(t.more)
	return c
}

func (t *tally) merge(o *tally) {
	for i, n := range o.n {
		t.n[i] += n
	}
	for i, c := range o.codes {
		if c != 0 {
			t.addStatus(c, o.ns[i])
		}
	}
	for _, s := range o.more {
		t.addStatus(s.code, s.n)
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
		Status:          make(map[string]uint64, tallyStatuses+len(t.more)),
	}
	for _, n := range t.n {
		c.Requests += n
	}
	for i, code := range t.codes {
		if code != 0 {
			c.Status[statusKey(int(code))] += t.ns[i]
		}
	}
	for _, s := range t.more {
		c.Status[statusKey(int(s.code))] += s.n
	}
	return c
}
