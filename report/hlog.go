package report

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// WriteHlog writes r's per-group latency histograms as an HdrHistogram
// interval log (format 1.3, headers by HistogramLogWriter, interval lines in
// its format, readable by HistogramLogReader): one line per
// series bucket and group that holds ok responses, tagged with the group's
// name (commas, spaces and line breaks replaced by '_'), in bucket order then
// group order. The StartTime and BaseTime headers are the run's wall-clock
// start (r.StartUnixMS, the epoch when unknown), written as the Java
// HistogramLogWriter writes them (seconds to the millisecond), so that the
// reference readers take the interval timestamps as relative to it.
// Timestamps are model seconds from the start of the run, values
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
	// hdrhistogram-go's OutputStartTime and OutputBaseTime drop the
	// milliseconds the Java writer keeps.
	start := time.UnixMilli(r.StartUnixMS).UTC()
	if _, err := fmt.Fprintf(w, "#[StartTime: %.3f (seconds since epoch), %s]\n#[BaseTime: %.3f (seconds since epoch)]\n",
		float64(r.StartUnixMS)/1000, start.Format(time.RFC3339Nano), float64(r.StartUnixMS)/1000); err != nil {
		return err
	}
	if err := lw.OutputLegend(); err != nil {
		return err
	}
	if r.Histograms == nil || r.Series == nil {
		return nil
	}
	// Interval lines are written as HistogramLogWriter writes them, but from
	// the encodings already in r: encoding them again would allocate a
	// deflater per line (seconds and a gigabyte for a ten-minute run).
	bw := bufio.NewWriter(w)
	stepMs := math.Round(r.Series.Step * 1000)
	for i, iv := range r.Histograms.Intervals {
		st, err := iv.figures()
		if err != nil {
			return fmt.Errorf("writing interval log: interval %d (group %s at %gs): %w", i, iv.Group, iv.T, err)
		}
		start := math.Round(iv.T * 1000)
		fmt.Fprintf(bw, "Tag=%s,%f,%f,%f,%s\n", sanitizeTag(iv.Group), start/1000, stepMs/1000, float64(st.max)/hdr.MsToNsRatio, iv.Hist)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing interval log: %w", err)
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
