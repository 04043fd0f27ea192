package scenarios

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file reads and writes the value syntaxes of a scenario file:
// durations, rates, host templates and SLO objectives.

// parseDuration reads a non-negative duration with a unit ("120s", "2m");
// a bare 0 is allowed, other bare numbers are not, since "120" could mean
// seconds or milliseconds.
func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
			return 0, fmt.Errorf("%q has no unit", s)
		}
		return 0, fmt.Errorf("%q is not a duration", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	return d, nil
}

// rateUnits are the units a rate may be written in, with their length.
var rateUnits = []struct {
	name string
	per  time.Duration
}{{"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}}

// parseRate reads "N/s", "N/m" or "N/h" (N may be a fraction: 0.2/s), or
// nginx's spelling "Nr/s", "Nr/m" that the proxy's limits use, and returns
// requests per second.
func parseRate(s string) (float64, error) {
	num, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return 0, fmt.Errorf("%q is not a rate", s)
	}
	num, unit = strings.TrimSpace(num), strings.TrimSpace(unit)
	num = strings.TrimSuffix(num, "r") // 5r/s as nginx writes it
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a rate", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	for _, u := range rateUnits {
		if unit == u.name {
			r := v / u.per.Seconds()
			if v > 0 && r == 0 {
				return 0, fmt.Errorf("%q is too small", s)
			}
			return r, nil
		}
	}
	return 0, fmt.Errorf("%q has an unknown unit %q (want /s, /m or /h)", s, unit)
}

// formatRate writes a rate in requests per second in the first unit (/s,
// then /m, then /h) that gives an exact figure with at most three decimals,
// so that 0.2/s stays 0.2/s and 1/h stays 1/h.
func formatRate(r float64) string {
	for _, u := range rateUnits {
		v := r * u.per.Seconds()
		for prec := 0; prec <= 3; prec++ {
			s := strconv.FormatFloat(v, 'f', prec, 64) + "/" + u.name
			if back, err := parseRate(s); err == nil && back == r {
				return s
			}
		}
	}
	return strconv.FormatFloat(r, 'g', -1, 64) + "/s"
}

// template is a host or address template: literal text and {i}, the
// tenant's number from 1, optionally zero-padded as {i:03}.
type template struct {
	src   string
	parts []tplPart
}

type tplPart struct {
	lit   string
	isVar bool
	width int // zero-pad to this width; 0 = none
}

var errTemplate = errors.New("bad template")

// parseTemplate compiles s.
func parseTemplate(s string) (template, error) {
	t := template{src: s}
	rest := s
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			t.parts = append(t.parts, tplPart{lit: rest})
			break
		}
		if rest[open] == '}' {
			return t, fmt.Errorf("%w: %q has a } without {", errTemplate, s)
		}
		if open > 0 {
			t.parts = append(t.parts, tplPart{lit: rest[:open]})
		}
		end := strings.IndexByte(rest[open:], '}')
		if end < 0 {
			return t, fmt.Errorf("%w: %q has a { without }", errTemplate, s)
		}
		inner := rest[open+1 : open+end]
		p, ok := tplVar(inner)
		if !ok {
			return t, fmt.Errorf("%w: %q: unknown placeholder {%s} (want {i}, the tenant's number from 1, or {i:03} zero-padded)", errTemplate, s, inner)
		}
		t.parts = append(t.parts, p)
		rest = rest[open+end+1:]
	}
	return t, nil
}

func tplVar(s string) (tplPart, bool) {
	name, format, hasFormat := strings.Cut(s, ":")
	if strings.TrimSpace(name) != "i" {
		return tplPart{}, false
	}
	if !hasFormat {
		return tplPart{isVar: true}, true
	}
	if len(format) < 2 || format[0] != '0' {
		return tplPart{}, false
	}
	w, err := strconv.Atoi(format[1:])
	if err != nil || w < 1 || w > 9 {
		return tplPart{}, false
	}
	return tplPart{isVar: true, width: w}, true
}

// numbered reports whether the template uses {i}.
func (t template) numbered() bool {
	for _, p := range t.parts {
		if p.isVar {
			return true
		}
	}
	return false
}

// expand fills in tenant number i (from 1).
func (t template) expand(i int) string {
	var b strings.Builder
	for _, p := range t.parts {
		switch {
		case !p.isVar:
			b.WriteString(p.lit)
		case p.width > 0:
			fmt.Fprintf(&b, "%0*d", p.width, i)
		default:
			b.WriteString(strconv.Itoa(i))
		}
	}
	return b.String()
}

// Metrics an SLO may name.
var (
	latencyMetrics = []string{"p50", "p90", "p95", "p99", "p999", "max", "mean"}
	rateMetrics    = []string{"ok_rate", "rejected_rate", "error_rate", "timeout_rate"}
	sloOps         = []string{"<=", ">=", "<", ">"}
)

// IsLatency reports whether the SLO's metric is a latency (Threshold in
// milliseconds) rather than a rate (a fraction).
func (s SLO) IsLatency() bool {
	return slices.Contains(latencyMetrics, s.Metric)
}

// Holds reports whether value meets the objective.
func (s SLO) Holds(value float64) bool {
	switch s.Op {
	case "<":
		return value < s.Threshold
	case "<=":
		return value <= s.Threshold
	case ">":
		return value > s.Threshold
	case ">=":
		return value >= s.Threshold
	}
	return false
}

// parseSLO reads "METRIC OP VALUE", as "p99 < 1s" or "ok_rate >= 99.5%".
func parseSLO(text string) (SLO, error) {
	s := SLO{Text: text}
	t := strings.TrimSpace(text)
	i := strings.IndexAny(t, "<>=!")
	if i < 0 {
		return s, fmt.Errorf("%q is not METRIC OP VALUE", text)
	}
	s.Metric = strings.TrimSpace(t[:i])
	rest := t[i:]
	for _, op := range sloOps {
		if strings.HasPrefix(rest, op) {
			s.Op = op
			break
		}
	}
	if s.Op == "" {
		end := strings.IndexFunc(rest, func(r rune) bool { return !strings.ContainsRune("<>=!", r) })
		if end < 0 {
			end = len(rest)
		}
		return s, fmt.Errorf("%q: unknown comparison %q (want <, <=, > or >=)", text, rest[:end])
	}
	val := strings.TrimSpace(rest[len(s.Op):])
	switch {
	case s.Metric == "":
		return s, fmt.Errorf("%q names no metric", text)
	case slices.Contains(latencyMetrics, s.Metric):
		d, err := parseDuration(val)
		if err != nil {
			return s, fmt.Errorf("%q: %v; a latency needs a duration", text, err)
		}
		s.Threshold = float64(d) / float64(time.Millisecond)
	case slices.Contains(rateMetrics, s.Metric):
		f, err := parseFraction(val)
		if err != nil {
			return s, fmt.Errorf("%q: %v", text, err)
		}
		s.Threshold = f
	default:
		return s, fmt.Errorf("%q: unknown metric %q%s (want one of %s)", text, s.Metric,
			suggest(s.Metric, append(slices.Clone(latencyMetrics), rateMetrics...)),
			strings.Join(append(slices.Clone(latencyMetrics), rateMetrics...), " "))
	}
	return s, nil
}

// parseFraction reads a percent ("99%") or a fraction ("0.99") into 0..1.
func parseFraction(s string) (float64, error) {
	s = strings.TrimSpace(s)
	pct := strings.HasSuffix(s, "%")
	num := strings.TrimSpace(strings.TrimSuffix(s, "%"))
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not a percent or fraction", s)
	}
	if f < 0 {
		return 0, fmt.Errorf("%q is negative", s)
	}
	if pct {
		if f > 100 {
			return 0, fmt.Errorf("%q is over 100%%", s)
		}
		return f / 100, nil
	}
	if f > 1 {
		return 0, fmt.Errorf("%q is over 1; write a percent with %%, as %s%%", s, num)
	}
	return f, nil
}
