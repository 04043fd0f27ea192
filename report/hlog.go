package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// WriteHlog writes r's per-group latency histograms as an HdrHistogram
// interval log (format 1.3, as HistogramLogWriter writes it): one line per
// series bucket and group that holds ok responses, tagged with the group's
// name (commas, spaces and line breaks replaced by '_'), in bucket order then
// group order. Timestamps are model seconds from the start of the run, values
// are model-time microseconds, and the Interval_Max column, which the writer
// scales by 10⁶, is therefore in seconds. A Results without histograms or
// series gives a log of headers only.
func WriteHlog(w io.Writer, r *Results) error {
	lw := hdr.NewHistogramLogWriter(w)
	if err := lw.OutputLogFormatVersion(); err != nil {
		return err
	}
	comment := fmt.Sprintf("[stampede scenario %s, engine %s: ok-response latency in model-time microseconds, model seconds from the start, Interval_Max in seconds, one tag per group]",
		sanitizeTag(r.Scenario), r.Engine)
	if err := lw.OutputComment(comment); err != nil {
		return err
	}
	if err := lw.OutputLegend(); err != nil {
		return err
	}
	if r.Histograms == nil || r.Series == nil {
		return nil
	}
	stepMs := int64(math.Round(r.Series.Step * 1000))
	for i, iv := range r.Histograms.Intervals {
		h, err := decode(iv.Hist)
		if err != nil {
			return fmt.Errorf("writing interval log: interval %d (group %s at %gs): %w", i, iv.Group, iv.T, err)
		}
		start := int64(math.Round(iv.T * 1000))
		h.SetTag(sanitizeTag(iv.Group))
		h.SetStartTimeMs(start)
		h.SetEndTimeMs(start + stepMs)
		if err := lw.OutputIntervalPackedHistogram(h); err != nil {
			return fmt.Errorf("writing interval log: %w", err)
		}
	}
	return nil
}

// sanitizeTag makes s usable as an interval log tag.
func sanitizeTag(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ',', ' ', '\r', '\n', '\t':
			return '_'
		}
		return r
	}, s)
}
