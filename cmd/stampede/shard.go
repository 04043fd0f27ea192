package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"stampede/report"
	"stampede/scenarios"
)

// The environment a shard may be told its place by: STAMPEDE_SHARD=I/N, or
// the index a Kubernetes Indexed Job gives each pod with --shards N.
const (
	envShard      = "STAMPEDE_SHARD"
	envJobIndex   = "JOB_COMPLETION_INDEX"
	envStartAt    = "STAMPEDE_START_AT"
	envRunID      = "STAMPEDE_RUN_ID"
	startAtLayout = time.RFC3339
)

// lateStart is how long after --start-at a shard may still begin: pods a
// second late are still together; later ones would play beside, not with,
// the others, so they refuse rather than give a merge that looks whole.
const lateStart = time.Second

// shardFlags are the flags that make a run, or a sweep, one shard of
// several.
type shardFlags struct {
	shard   string // I/N
	shards  int    // N, with the index from JOB_COMPLETION_INDEX
	startAt string
	runID   string
}

func (f *shardFlags) register(c *cobra.Command, startAt bool) {
	c.Flags().StringVar(&f.shard, "shard", "", "play shard I of N (I from 0, as JOB_COMPLETION_INDEX), e.g. 0/3; also "+envShard+"=I/N")
	c.Flags().IntVar(&f.shards, "shards", 0, "the number of shards N, the index taken from "+envJobIndex+" (a Kubernetes Indexed Job)")
	c.Flags().StringVar(&f.runID, "run-id", "", "name the run the shards belong to (default: derived from the scenario, its settings and --start-at); also "+envRunID)
	if startAt {
		c.Flags().StringVar(&f.startAt, "start-at", "", "wait until this wall time (RFC 3339, e.g. 2026-12-01T10:00:00Z) to begin, so that shards started apart begin together; also "+envStartAt)
	}
}

// shardSpec is a resolved shardFlags: Count 0 means the whole run.
type shardSpec struct {
	report.ShardInfo
	start time.Time // zero: now
	runID string    // as given; empty to derive
}

// resolve reads the flags, then the environment (getenv), into a shardSpec.
func (f *shardFlags) resolve(getenv func(string) string) (shardSpec, error) {
	var s shardSpec
	spec, from := f.shard, "--shard"
	if spec == "" && f.shards == 0 {
		if spec = getenv(envShard); spec != "" {
			from = envShard
		}
	}
	switch {
	case spec != "" && f.shards != 0:
		return s, usagef("%s %s and --shards %d: give one", from, spec, f.shards)
	case spec != "":
		i, n, err := parseShard(spec)
		if err != nil {
			return s, usagef("%s %q: %v", from, spec, err)
		}
		s.Index, s.Count = i, n
	case f.shards != 0:
		if f.shards < 1 || f.shards > scenarios.MaxShards {
			return s, usagef("--shards %d: want 1 to %d", f.shards, scenarios.MaxShards)
		}
		v := getenv(envJobIndex)
		if v == "" {
			return s, usagef("--shards %d takes the shard's index from %s, which is not set (a Kubernetes Indexed Job sets it; elsewhere give --shard I/N)", f.shards, envJobIndex)
		}
		i, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || i < 0 || i >= f.shards {
			return s, usagef("%s=%q with --shards %d: want an index from 0 to %d", envJobIndex, v, f.shards, f.shards-1)
		}
		s.Index, s.Count = i, f.shards
	}
	at, from := f.startAt, "--start-at"
	if at == "" {
		at, from = getenv(envStartAt), envStartAt
	}
	if at != "" {
		t, err := time.Parse(startAtLayout, strings.TrimSpace(at))
		if err != nil {
			return s, usagef("%s %q: want an RFC 3339 time, e.g. 2026-12-01T10:00:00Z", from, at)
		}
		s.start = t
	}
	s.runID = f.runID
	if s.runID == "" {
		s.runID = strings.TrimSpace(getenv(envRunID))
	}
	return s, nil
}

// parseShard reads "I/N".
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			n, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil {
		return 0, 0, fmt.Errorf("want I/N, e.g. 0/3")
	}
	if n < 1 || n > scenarios.MaxShards {
		return 0, 0, fmt.Errorf("%d shards: want 1 to %d", n, scenarios.MaxShards)
	}
	if i < 0 || i >= n {
		return 0, 0, fmt.Errorf("shard %d of %d: the index counts from 0 to %d, as %s does", i, n, n-1, envJobIndex)
	}
	return i, n, nil
}

// runIDOf returns the run's id: given, or derived from what every shard of
// the run shares: the whole scenario with its settings (as Format writes
// it), extra (a sweep's axes), and the start time.
func (s shardSpec) runIDOf(sc *scenarios.Scenario, extra string) (string, error) {
	if s.runID != "" {
		return s.runID, nil
	}
	var b bytes.Buffer
	if err := sc.Format(&b); err != nil {
		return "", fmt.Errorf("deriving the run id of %s: %w", sc.Name, err)
	}
	b.WriteString("\x00" + extra + "\x00")
	if !s.start.IsZero() {
		b.WriteString(s.start.UTC().Format(time.RFC3339Nano))
	}
	sum := sha256.Sum256(b.Bytes())
	return sc.Name + "-" + hex.EncodeToString(sum[:6]), nil
}

// stamp records the shard, run and start time in res.
func (s shardSpec) stamp(res *report.Results, runID string) {
	res.RunID = runID
	if s.Count > 0 {
		info := s.ShardInfo
		res.Shard = &info
	}
	if !s.start.IsZero() {
		res.StartAt = s.start.UTC().Format(startAtLayout)
	}
}

// waitStart waits until the start time, telling w; it returns an
// exitCodeError 130 when ctx ends first and a usage error when the start
// passed more than lateStart ago.
func (s shardSpec) waitStart(ctx context.Context, w io.Writer, now func() time.Time) error {
	if s.start.IsZero() {
		return nil
	}
	d := s.start.Sub(now())
	if d < -lateStart {
		return usagef("--start-at %s was %s ago: this shard would begin after the others; give a later time", s.start.UTC().Format(startAtLayout), (-d).Round(time.Millisecond))
	}
	if d <= 0 {
		return nil
	}
	fmt.Fprintf(w, "waiting %s, until %s, to begin\n", d.Round(time.Millisecond), s.start.UTC().Format(startAtLayout))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return exitCodeError{exitInterrupted, "interrupted while waiting for --start-at: nothing played"}
	case <-t.C:
		return nil
	}
}

// shardPoints returns the indexes of the sweep points (of n) that shard s
// plays: every Count-th from its Index, each point whole.
func (s shardSpec) shardPoints(n int) []int {
	var out []int
	for i := 0; i < n; i++ {
		if s.Count == 0 || i%s.Count == s.Index {
			out = append(out, i)
		}
	}
	return out
}

// runShard makes sc the shard of the run that sf names, checks that the
// run may be split, and returns the shard's spec and the run's id (empty
// for a whole run without --run-id).
func runShard(w io.Writer, f *runFlags, sf *shardFlags, sc *scenarios.Scenario) (*scenarios.Scenario, shardSpec, string, error) {
	sh, err := sf.resolve(getenv)
	if err != nil {
		return nil, sh, "", err
	}
	whole := sc
	if sh.Count > 0 {
		switch {
		case f.engine == "sim":
			return nil, sh, "", usagef("--shard %s: a simulated run is not split: its tenants share one backend, which only one process can model (a sweep splits: compare --sweep ... --shard I/N)", sh.ShardInfo)
		case f.target == "":
			return nil, sh, "", usagef("--shard %s needs --target: the shards' tenants must share the one server under test, and each process's built-in proxy and backend would be a server of its own", sh.ShardInfo)
		}
		if sc, err = sc.Shard(sh.Index, sh.Count); err != nil {
			return nil, sh, "", asUsage(err)
		}
	}
	if f.engine == "sim" && !sh.start.IsZero() {
		return nil, sh, "", usagef("--start-at: the sim plays in virtual time and starts at once")
	}
	id := ""
	if sh.Count > 0 || sh.runID != "" {
		if id, err = sh.runIDOf(whole, ""); err != nil {
			return nil, sh, "", err
		}
	}
	if sh.Count > 0 {
		fmt.Fprintf(w, "shard %s of run %s plays %s\n", sh.ShardInfo, id, describeShard(sc))
		if sh.start.IsZero() {
			fmt.Fprintf(w, "no --start-at: this shard begins now, whenever the others do\n")
		}
	}
	return sc, sh, id, nil
}

// getenv is os.Getenv; tests replace it.
var getenv = os.Getenv

// verdict is verdict for a whole run; a shard's SLOs are over its part of
// the tenants only, so it exits 0 (or 130) and the merged report gives the
// verdict. (A pod of a Job that exits 3 would be retried.)
func (s shardSpec) verdict(res *report.Results) error {
	if s.Count > 0 && !res.Interrupted {
		return nil
	}
	return verdict(res)
}

// defaultDir is where a run writes without -o: dir, or for a shard its
// shard-I folder inside, so that shards played on one machine do not
// overwrite each other.
func (s shardSpec) defaultDir(dir string) string {
	if s.Count == 0 {
		return dir
	}
	return filepath.Join(dir, "shard-"+strconv.Itoa(s.Index))
}

// describeShard lists the tenants a shard plays, the first few by name,
// with the users of a closed-model tenant cut into pieces.
func describeShard(sc *scenarios.Scenario) string {
	ts := sc.Expand()
	if len(ts) == 0 {
		return "no tenant (more shards than the load can be cut into)"
	}
	var names []string
	for i, t := range ts {
		if i == 8 {
			names = append(names, fmt.Sprintf("and %d more", len(ts)-i))
			break
		}
		n := t.Name
		if g := sc.Group(t.Group); g != nil && g.Load.Model == scenarios.Closed && t.Load.Users != g.Load.Users {
			n += fmt.Sprintf(" (%d of its %d users)", t.Load.Users, g.Load.Users)
		} else if g != nil && g.Load.Model == scenarios.Open && t.Load.Rate != g.Load.Rate {
			n += fmt.Sprintf(" (%.3g of its %.3g requests/s)", t.Load.Rate, g.Load.Rate)
		}
		names = append(names, n)
	}
	return fmt.Sprintf("%d tenants: %s", len(ts), strings.Join(names, ", "))
}
