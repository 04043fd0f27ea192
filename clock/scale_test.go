package clock

import (
	"math"
	"testing"
	"time"
)

func TestScale(t *testing.T) {
	for i, c := range []struct {
		s           Scale
		model, wall time.Duration
	}{
		{0, 3 * time.Second, 3 * time.Second},
		{1, math.MaxInt64, math.MaxInt64},
		{0.01, 120 * time.Second, 1200 * time.Millisecond},
		{0.5, -4 * time.Second, -2 * time.Second},
		{2, 5 * time.Second, 10 * time.Second},
	} {
		if got := c.s.Wall(c.model); got != c.wall {
			t.Errorf("case %d: Scale(%v).Wall(%v) = %v, want %v", i, c.s, c.model, got, c.wall)
		}
		if got := c.s.Model(c.wall); got != c.model {
			t.Errorf("case %d: Scale(%v).Model(%v) = %v, want %v", i, c.s, c.wall, got, c.model)
		}
	}
	if got := Scale(1e-9).Model(math.MaxInt64 / 2); got != math.MaxInt64 {
		t.Errorf("Model past the int64 range = %v, want it saturated at %v", got, time.Duration(math.MaxInt64))
	}
	if got := Scale(1e-9).Model(math.MinInt64 / 2); got != math.MinInt64 {
		t.Errorf("Model past the int64 range = %v, want it saturated at %v", got, time.Duration(math.MinInt64))
	}
}

func TestScaleValidate(t *testing.T) {
	for _, s := range []Scale{0, 1, 0.01, 3} {
		if err := s.Validate(); err != nil {
			t.Errorf("Scale(%v).Validate() = %v, want nil", s, err)
		}
	}
	for _, s := range []Scale{-0.5, Scale(math.NaN()), Scale(math.Inf(1))} {
		if err := s.Validate(); err == nil {
			t.Errorf("Scale(%v).Validate() = nil, want an error", s)
		}
	}
	if got := Scale(0).Factor(); got != 1 {
		t.Errorf("Scale(0).Factor() = %v, want 1", got)
	}
}

func TestModelClock(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c := ModelClock{Base: base, Scale: 0.01}
	if got, want := c.WallAt(10*time.Minute), base.Add(6*time.Second); !got.Equal(want) {
		t.Errorf("WallAt(10m) = %v, want %v", got, want)
	}
	n := NewModelClock(0.001)
	if got := n.Now(); got < 0 {
		t.Errorf("Now() just after NewModelClock = %v, want at least 0", got)
	}
}
