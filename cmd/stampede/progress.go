package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"stampede/loadgen"
)

// tally counts results by outcome as they pass to the next sink, so that a
// progress display can read them from another goroutine.
type tally struct {
	next    loadgen.Sink
	model   atomic.Int64 // latest intended send time seen, model ns
	total   atomic.Uint64
	outcome [loadgen.NumOutcomes]atomic.Uint64
}

// Add counts r and passes it on.
func (t *tally) Add(r *loadgen.Result) {
	if int64(r.Intended) > t.model.Load() {
		t.model.Store(int64(r.Intended))
	}
	t.total.Add(1)
	if r.Outcome < loadgen.NumOutcomes {
		t.outcome[r.Outcome].Add(1)
	}
	if t.next != nil {
		t.next.Add(r)
	}
}

func (t *tally) line(rate float64) string {
	o := func(x loadgen.Outcome) uint64 { return t.outcome[x].Load() }
	return fmt.Sprintf("%6.0f req/s  ok %d  503 %d  502 %d  504 %d  timeout %d  dropped %d",
		rate, o(loadgen.OK), o(loadgen.Rejected), o(loadgen.BackendError), o(loadgen.GatewayTimeout), o(loadgen.ClientTimeout), o(loadgen.Dropped))
}

// isTerminal reports whether w is a character device, where bars can be
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressView shows one run's progress: an mpb bar of model time on a
// terminal, plain lines every few seconds elsewhere, nothing when quiet.
// Stop must be called once; it waits for the display to finish.
type progressView struct {
	stop func(interrupted bool)
}

// showProgress starts showing t's progress towards total model time.
// clock returns the model time elapsed; nil uses the latest result's intended
// time.
func showProgress(w io.Writer, mode string, title string, total time.Duration, t *tally, clock func() time.Duration) *progressView {
	if clock == nil {
		clock = func() time.Duration { return time.Duration(t.model.Load()) }
	}
	start := time.Now()
	var (
		mu       sync.Mutex
		lastN    uint64
		lastT    = start
		lastRate float64
	)
	rate := func() float64 {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if dt := now.Sub(lastT).Seconds(); dt >= 0.5 {
			n := t.total.Load()
			lastRate = float64(n-lastN) / dt
			lastN, lastT = n, now
		}
		return lastRate
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	switch mode {
	case "quiet":
		close(finished)
	case "bar":
		p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(32), mpb.WithRefreshRate(150*time.Millisecond))
		bar := p.New(int64(total/time.Millisecond), mpb.BarStyle().Lbound("[").Rbound("]"),
			mpb.PrependDecorators(
				decor.Name(title+" ", decor.WCSyncSpaceR),
				decor.Any(func(decor.Statistics) string {
					el := min(clock(), total)
					return fmt.Sprintf("%s / %s (%s left)", roundDur(el), roundDur(total), roundDur(total-el))
				}),
			),
			mpb.AppendDecorators(decor.Any(func(decor.Statistics) string { return t.line(rate()) })),
		)
		go func() {
			defer close(finished)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					bar.SetCurrent(int64(min(clock(), total) / time.Millisecond))
					bar.SetTotal(-1, true)
					p.Wait()
					return
				case <-tick.C:
					bar.SetCurrent(int64(min(clock(), total) / time.Millisecond))
				}
			}
		}()
	default: // plain lines
		go func() {
			defer close(finished)
			tick := time.NewTicker(2 * time.Second)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					fmt.Fprintf(w, "%s %s / %s  %s\n", title, roundDur(min(clock(), total)), roundDur(total), t.line(rate()))
				}
			}
		}()
	}
	var once sync.Once
	return &progressView{stop: func(bool) {
		once.Do(func() { close(done) })
		<-finished
	}}
}

// Stop ends the display and waits for it.
func (v *progressView) Stop() { v.stop(false) }

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second)
	case d >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
