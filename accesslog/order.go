package accesslog

import (
	"math"
	"slices"
	"time"

	"stampede/scenarios"
)

// maxBuckets bounds the buckets of the counting sort that orders the
// trace (a tenant and a route each, 4 bytes a bucket); with more, the
// arrivals are sorted by their whole keys instead.
var maxBuckets = 1 << 22

// buckets are the arrivals in the order the trace is written: bucket by
// bucket, a bucket a tenant and a route (by group, tenant in the group,
// route), each bucket's ticks in time order.
type buckets struct {
	ticks   []uint32 // the arrivals' ticks, bucket after bucket
	end     []uint32 // per bucket: where its ticks end in ticks
	routes  int      // buckets per tenant
	tenants [][2]int // per tenant in order: its group and number
}

// order puts the arrivals, which build re-keyed as group, tenant, route
// and tick, in the trace's order. With buckets few enough it counts them
// into scratch (as long as the arrivals, and no longer needed): the
// arrivals come nearly in time order, which a stable count keeps in each
// bucket, so that most need no sort and the rest little. Else it sorts
// the keys in place.
func (b *built) order(scratch []uint32) {
	ticks := b.im.ticks
	var tenants [][2]int
	groupStart := make([]int, len(b.groups))
	for gi, g := range b.groups {
		groupStart[gi] = len(tenants)
		for n := range g.keys {
			tenants = append(tenants, [2]int{gi, n + 1})
		}
	}
	nr := len(b.routes)
	if len(tenants)*nr > maxBuckets || len(scratch) != len(ticks) || len(ticks) >= math.MaxUint32 {
		slices.Sort(ticks)
		return
	}
	bucket := func(k uint64) int {
		return (groupStart[k>>groupShift]+int(k>>tenantShift&tenantMask)-1)*nr + int(k>>32&routeMask)
	}
	end := make([]uint32, len(tenants)*nr)
	for _, k := range ticks {
		end[bucket(k)]++
	}
	var at uint32
	for i, n := range end {
		end[i], at = at, at+n // where bucket i starts
	}
	for _, k := range ticks {
		i := bucket(k)
		scratch[end[i]] = uint32(k)
		end[i]++ // at last, where it ends
	}
	start := uint32(0)
	for _, e := range end {
		if seg := scratch[start:e]; !slices.IsSorted(seg) {
			slices.Sort(seg)
		}
		start = e
	}
	b.sorted = &buckets{ticks: scratch, end: end, routes: nr, tenants: tenants}
}

// writeTrace writes the ordered arrivals to tw.
func (b *built) writeTrace(tw *scenarios.TraceWriter) {
	var ats []time.Duration
	bs := b.sorted
	if bs == nil {
		b.writeTraceKeys(tw)
		return
	}
	start, lastTenant := uint32(0), -1
	for i, e := range bs.end {
		if e == start {
			continue
		}
		if t := i / bs.routes; t != lastTenant {
			lastTenant = t
			tw.Tenant(b.groups[bs.tenants[t][0]].name, bs.tenants[t][1])
		}
		ats = ats[:0]
		for _, tick := range bs.ticks[start:e] {
			ats = append(ats, b.model(int64(tick)))
		}
		tw.Route(b.routes[i%bs.routes].name, ats)
		start = e
	}
}

// writeTraceKeys writes the arrivals sorted by their whole keys to tw.
func (b *built) writeTraceKeys(tw *scenarios.TraceWriter) {
	var ats []time.Duration
	cur := uint64(math.MaxUint64)
	flush := func() {
		if cur == math.MaxUint64 || len(ats) == 0 {
			return
		}
		tw.Route(b.routes[cur&routeMask].name, ats)
		ats = ats[:0]
	}
	lastTenant := uint64(math.MaxUint64)
	for _, k := range b.im.ticks {
		if k>>32 != cur {
			flush()
			cur = k >> 32
			if t := k >> tenantShift; t != lastTenant {
				lastTenant = t
				tw.Tenant(b.groups[k>>groupShift].name, int(k>>tenantShift&tenantMask))
			}
		}
		ats = append(ats, b.model(int64(k&math.MaxUint32)))
	}
	flush()
}
