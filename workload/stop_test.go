package workload

import (
	"testing"
	"time"

	"stampede/scenarios"
)

func TestStop(t *testing.T) {
	m := time.Minute
	for _, c := range []struct {
		name          string
		stop, horizon time.Duration
		want          time.Duration
	}{
		{"no stop", 0, 10 * m, 10 * m},
		{"stop inside", 3 * m, 10 * m, 3 * m},
		{"stop past the horizon", 20 * m, 10 * m, 10 * m},
		{"no horizon", 3 * m, 0, 3 * m},
	} {
		if got := Stop(&scenarios.Load{Stop: c.stop}, c.horizon); got != c.want {
			t.Errorf("%s: Stop = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDrain(t *testing.T) {
	s := time.Second
	tenants := func(timeouts ...time.Duration) []scenarios.Tenant {
		var ts []scenarios.Tenant
		for _, d := range timeouts {
			ts = append(ts, scenarios.Tenant{Load: &scenarios.Load{ClientTimeout: d}})
		}
		return ts
	}
	for _, c := range []struct {
		name    string
		read    time.Duration
		tenants []scenarios.Tenant
		want    time.Duration
	}{
		{"client timeouts", 0, tenants(5*s, 30*s), 30 * s},
		{"read timeout longer", 60 * s, tenants(5 * s), 60 * s},
		{"a tenant without a timeout, a read timeout", 60 * s, tenants(0, 5*s), 60 * s},
		{"a tenant without any timeout", 0, tenants(0, 5*s), DefaultDrain},
		{"no tenants", 0, nil, 0},
	} {
		sc := &scenarios.Scenario{Proxy: scenarios.Proxy{ReadTimeout: c.read}}
		if got := Drain(sc, c.tenants); got != c.want {
			t.Errorf("%s: Drain = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestReached(t *testing.T) {
	for _, c := range []struct{ reached, duration, want time.Duration }{
		{0, time.Hour, time.Nanosecond},
		{time.Minute, time.Hour, time.Minute},
		{2 * time.Hour, time.Hour, time.Hour},
	} {
		if got := Reached(c.reached, c.duration); got != c.want {
			t.Errorf("Reached(%v, %v) = %v, want %v", c.reached, c.duration, got, c.want)
		}
	}
}

func TestClosedLoop(t *testing.T) {
	s := time.Second
	load := &scenarios.Load{Model: scenarios.Closed, Start: s, Think: 2 * s, Iterations: 2, OnTimeout: scenarios.Retry}
	c := NewClosed(load, time.Minute)
	at, ok := c.First()
	if !ok || at != s {
		t.Fatalf("First = %v, %v; want 1s, true", at, ok)
	}
	done := 0
	steps := []struct {
		name     string
		end      time.Duration
		o        Outcome
		want     time.Duration
		wantMore bool
	}{
		{"step 1: a client timeout retries the iteration", 3 * s, ClientTimeout, 5 * s, true},
		{"step 2: ok completes the first", 6 * s, OK, 8 * s, true},
		{"step 3: ok completes the second, the last", 9 * s, OK, 0, false},
	}
	for _, st := range steps {
		next, more := c.Next(&done, at, st.end, st.o)
		if more != st.wantMore || more && next != st.want {
			t.Fatalf("%s: Next = %v, %v; want %v, %v", st.name, next, more, st.want, st.wantMore)
		}
		at = next
	}
	if done != 2 {
		t.Errorf("done = %d, want 2", done)
	}

	giveUp := NewClosed(&scenarios.Load{Model: scenarios.Closed, OnTimeout: scenarios.GiveUp}, time.Minute)
	if _, more := giveUp.Next(new(int), 0, s, ClientTimeout); more {
		t.Error("give_up: a client timeout sends again, want the user to stop")
	}
	late := NewClosed(&scenarios.Load{Model: scenarios.Closed, Think: time.Minute}, time.Minute)
	if at, more := late.Next(new(int), 0, s, OK); more {
		t.Errorf("Next past the stop = %v, true; want false", at)
	}
	if _, ok := NewClosed(&scenarios.Load{Start: time.Minute}, time.Minute).First(); ok {
		t.Error("First with Start at the stop: true, want false")
	}
}

func TestCaps(t *testing.T) {
	if got := TenantCap(&scenarios.Load{}); got != DefaultTenantInFlight {
		t.Errorf("TenantCap(0) = %d, want %d", got, DefaultTenantInFlight)
	}
	if got := TenantCap(&scenarios.Load{MaxInFlight: 3}); got != 3 {
		t.Errorf("TenantCap(3) = %d, want 3", got)
	}
	for n, want := range map[int]int{0: DefaultMaxInFlight, -1: 0, 7: 7} {
		if got := TotalCap(n); got != want {
			t.Errorf("TotalCap(%d) = %d, want %d", n, got, want)
		}
	}
	for _, c := range []struct {
		tenant, tenantCap, total, totalCap int64
		want                               bool
	}{
		{0, 1, 0, 1, true},
		{1, 1, 0, 10, false},
		{0, 1, 10, 10, false},
		{0, 1, 1 << 40, 0, true},
	} {
		if got := Admit(c.tenant, c.tenantCap, c.total, c.totalCap); got != c.want {
			t.Errorf("Admit(%d, %d, %d, %d) = %v, want %v", c.tenant, c.tenantCap, c.total, c.totalCap, got, c.want)
		}
	}
}
