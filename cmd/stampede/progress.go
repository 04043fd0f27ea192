package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"stampede/workload"
)

// tally counts results by outcome as they pass to the next sink, so that a
// progress display can read them from another goroutine.
type tally struct {
	next    workload.Sink
	model   atomic.Int64 // latest intended send time seen, model ns
	total   atomic.Uint64
	outcome [workload.NumOutcomes]atomic.Uint64

	// rejectLabel names rejections in the line, set before the display
	// starts: the limits' statuses ("429"); "" says "rejected".
	rejectLabel string
}

// Add counts r and passes it on.
func (t *tally) Add(r *workload.Result) {
	if int64(r.Intended) > t.model.Load() {
		t.model.Store(int64(r.Intended))
	}
	t.total.Add(1)
	if r.Outcome < workload.NumOutcomes {
		t.outcome[r.Outcome].Add(1)
	}
	if t.next != nil {
		t.next.Add(r)
	}
}

// progressState is what one progress line shows.
type progressState struct {
	wall        time.Duration // wall time since the run began
	model       time.Duration // model time played
	total       time.Duration // the scenario's model duration
	done        uint64        // results so far
	outcomes    [workload.NumOutcomes]uint64
	rejectLabel string // what the limits answer: "503", "429", "503/429"
}

// state reads t at wall time wall and model time model.
func (t *tally) state(wall, model, total time.Duration) progressState {
	s := progressState{wall: wall, model: min(model, total), total: total, done: t.total.Load(), rejectLabel: t.rejectLabel}
	for i := range s.outcomes {
		s.outcomes[i] = t.outcome[i].Load()
	}
	if s.rejectLabel == "" {
		s.rejectLabel = "rejected"
	}
	return s
}

// progressFields are a progress line's parts, the most wanted first: model
// time, wall time elapsed and left, the outcomes that happened, the model
// and wall rates.
func progressFields(s progressState) []string {
	f := []string{fmt.Sprintf("model %s/%s", roundDur(s.model), roundDur(s.total))}
	wall := "wall " + roundDur(s.wall).String()
	if s.model > 0 && s.model < s.total {
		left := time.Duration(float64(s.total-s.model) * float64(s.wall) / float64(s.model))
		wall += ", " + roundDur(left).String() + " left"
	}
	f = append(f, wall)
	labels := [workload.NumOutcomes]string{
		workload.OK: "ok", workload.Rejected: s.rejectLabel, workload.BackendError: "502", workload.GatewayTimeout: "504",
		workload.ClientTimeout: "timeout", workload.Dropped: "dropped", workload.Error: "error",
	}
	var outs []string
	for o, n := range s.outcomes {
		if n > 0 || o == int(workload.OK) {
			outs = append(outs, fmt.Sprintf("%s %d", labels[o], n))
		}
	}
	f = append(f, strings.Join(outs, " "))
	if s.model > 0 && s.wall > 0 {
		f = append(f, fmt.Sprintf("%s req/s model, %s/s wall", shortRate(float64(s.done)/s.model.Seconds()), shortRate(float64(s.done)/s.wall.Seconds())))
	}
	return f
}

// progressLine joins the fields of s that fit in width columns (all of them
// for width 0), dropping the least wanted first, so that the line degrades
// cleanly on a narrow terminal instead of pushing the bar out.
func progressLine(s progressState, width int) string {
	f := progressFields(s)
	for n := len(f); n > 0; n-- {
		line := strings.Join(f[:n], " · ")
		if width <= 0 || utf8.RuneCountInString(line) <= width { // one column a rune: the line is ASCII and ·
			return line
		}
	}
	if r := []rune(f[0]); len(r) > max(width, 1) {
		return string(r[:max(width-1, 0)]) + "…"
	}
	return f[0]
}

// shortRate writes a rate in at most 4 digits and a suffix: 950, 1.2k, 35k.
func shortRate(r float64) string {
	switch {
	case r >= 10_000:
		return fmt.Sprintf("%.0fk", r/1000)
	case r >= 1000:
		return fmt.Sprintf("%.1fk", r/1000)
	case r >= 10:
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

// rejectLabel is how the progress line labels rejections: the statuses the
// scenario's limits answer with.
func rejectLabel(statuses []int) string {
	s := make([]string, len(statuses))
	for i, st := range statuses {
		s[i] = strconv.Itoa(st)
	}
	return strings.Join(s, "/")
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

// minBar is the narrowest the progress bar gets before the line beside it
// drops fields.
const minBar = 12

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
	state := func() progressState { return t.state(time.Since(start), clock(), total) }
	done := make(chan struct{})
	finished := make(chan struct{})
	switch mode {
	case "quiet":
		close(finished)
	case "bar":
		p := mpb.New(mpb.WithOutput(w), mpb.WithWidth(32), mpb.WithRefreshRate(150*time.Millisecond))
		bar := p.New(int64(total/time.Millisecond), mpb.BarStyle().Lbound("[").Rbound("]"),
			mpb.PrependDecorators(decor.Name(title+" ", decor.WCSyncSpaceR)),
			// The line takes what the terminal leaves after the title and
			// a bar of at least minBar columns.
			mpb.AppendDecorators(decor.Any(func(st decor.Statistics) string {
				return " " + progressLine(state(), max(st.AvailableWidth-minBar-1, 10))
			})),
		)
		set := func() { bar.SetCurrent(int64(min(clock(), total) / time.Millisecond)) }
		go func() {
			defer close(finished)
			tickUntil(done, 100*time.Millisecond, set, func() {
				set()
				bar.SetTotal(-1, true)
				p.Wait()
			})
		}()
	default: // plain lines
		go func() {
			defer close(finished)
			tickUntil(done, 2*time.Second, func() {
				fmt.Fprintf(w, "%s %s\n", title, progressLine(state(), 0))
			}, func() {})
		}()
	}
	var once sync.Once
	return &progressView{stop: func(bool) {
		once.Do(func() { close(done) })
		<-finished
	}}
}

// tickUntil calls tick every period until done is closed, then final.
func tickUntil(done <-chan struct{}, period time.Duration, tick, final func()) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-done:
			final()
			return
		case <-t.C:
			tick()
		}
	}
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
