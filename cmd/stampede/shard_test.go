package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"stampede/report"
)

// TestCompareShardsJoin: a sweep of 6 points played as 3 shards (sim) and
// joined gives the comparison.json one compare writes, byte for byte, and
// the same results at every point but for wall times and shard marks.
func TestCompareShardsJoin(t *testing.T) {
	sc := writeScenario(t, miniScenario)
	sweep := []string{"--sweep", "proxy.limit_conn.per_key=off,1,2,3,4,6"}
	whole := t.TempDir()
	runExit(t, t.Context(), exitOK, append([]string{"compare", sc, "--engine", "sim", "-o", whole, "--no-progress"}, sweep...)...)
	var dirs []string
	for i := range 3 {
		d := filepath.Join(t.TempDir(), "shard-"+string(rune('0'+i)))
		stdout, _ := runExit(t, t.Context(), exitOK, append([]string{"compare", sc, "--engine", "sim", "-o", d, "--no-progress", "--shard", string(rune('0'+i)) + "/3"}, sweep...)...)
		if !strings.Contains(stdout, "2 of 6 points") {
			t.Errorf("shard %d: stdout does not say it played 2 of 6 points:\n%s", i, stdout)
		}
		dirs = append(dirs, d)
	}
	joined := filepath.Join(t.TempDir(), "joined")
	// Shards in any order; a missing one is named.
	runRefused(t, "lacks shard 1/3", "report", "--comparison", dirs[2], dirs[0], "-o", joined)
	// As a shell without globbing passes it: the pattern itself.
	runExit(t, t.Context(), exitOK, "report", "--comparison", filepath.Join(filepath.Dir(dirs[0]), "..", "*", "shard-*")+"/", "-o", joined)
	want, got := readFile(t, filepath.Join(whole, "comparison.json")), readFile(t, filepath.Join(joined, "comparison.json"))
	if !bytes.Equal(got, want) {
		t.Errorf("joined comparison.json differs from the whole sweep's:\n%s\nwant:\n%s", got, want)
	}
	cmp, err := report.ReadComparison(filepath.Join(joined, "comparison.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cmp.Points {
		a, errA := report.ReadResults(filepath.Join(whole, filepath.FromSlash(p.Results)))
		b, errB := report.ReadResults(filepath.Join(joined, filepath.FromSlash(p.Results)))
		if errA != nil || errB != nil {
			t.Fatalf("point %v: %v, %v", p.Value, errA, errB)
		}
		if a.Totals.Requests != b.Totals.Requests || a.Totals.OK != b.Totals.OK || b.Shard == nil {
			t.Errorf("point %v: joined %d requests %d ok (shard %v), whole %d and %d", p.Value, b.Totals.Requests, b.Totals.OK, b.Shard, a.Totals.Requests, a.Totals.OK)
		}
	}
	if _, err := os.Stat(filepath.Join(joined, "report.html")); err != nil {
		t.Errorf("joined report: %v", err)
	}
}

func TestShardFlags(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name  string
		flags shardFlags
		env   func(string) string
		want  report.ShardInfo
		err   string
	}{
		{name: "none", env: env()},
		{name: "--shard", flags: shardFlags{shard: "1/3"}, env: env(), want: report.ShardInfo{Index: 1, Count: 3}},
		{name: "STAMPEDE_SHARD", env: env(envShard, "2/4"), want: report.ShardInfo{Index: 2, Count: 4}},
		{name: "--shard over STAMPEDE_SHARD", flags: shardFlags{shard: "0/2"}, env: env(envShard, "2/4"), want: report.ShardInfo{Index: 0, Count: 2}},
		{name: "an Indexed Job", flags: shardFlags{shards: 5}, env: env(envJobIndex, "4"), want: report.ShardInfo{Index: 4, Count: 5}},
		{name: "--shards without an index", flags: shardFlags{shards: 5}, env: env(), err: "JOB_COMPLETION_INDEX, which is not set"},
		{name: "index past --shards", flags: shardFlags{shards: 2}, env: env(envJobIndex, "2"), err: "want an index from 0 to 1"},
		{name: "both", flags: shardFlags{shard: "0/2", shards: 2}, env: env(), err: "give one"},
		{name: "from 1", flags: shardFlags{shard: "3/3"}, env: env(), err: "counts from 0 to 2"},
		{name: "not I/N", flags: shardFlags{shard: "two"}, env: env(), err: "want I/N"},
		{name: "no shards", flags: shardFlags{shard: "0/0"}, env: env(), err: "0 shards"},
		{name: "bad start", flags: shardFlags{startAt: "noon"}, env: env(), err: "RFC 3339"},
		{name: "start from the environment", env: env(envStartAt, "2026-12-01T10:00:00Z")},
	}
	for _, tt := range tests {
		got, err := tt.flags.resolve(tt.env)
		switch {
		case tt.err != "":
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: resolve = %v, want an error containing %q", tt.name, err, tt.err)
			}
		case err != nil:
			t.Errorf("%s: resolve: %v", tt.name, err)
		case got.ShardInfo != tt.want:
			t.Errorf("%s: shard %v, want %v", tt.name, got.ShardInfo, tt.want)
		}
	}
}

func TestWaitStart(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	var w bytes.Buffer
	late := shardSpec{start: now.Add(-5 * time.Second)}
	if err := late.waitStart(context.Background(), &w, clock); err == nil || !strings.Contains(err.Error(), "was 5s ago") {
		t.Errorf("5 s late: %v, want a refusal saying how late", err)
	}
	if err := (shardSpec{start: now.Add(-500 * time.Millisecond)}).waitStart(context.Background(), &w, clock); err != nil {
		t.Errorf("half a second late: %v, want to begin at once", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := shardSpec{start: now.Add(time.Hour)}.waitStart(ctx, &w, clock)
	var ec exitCodeError
	if !asExit(err, &ec) || ec.code != exitInterrupted {
		t.Errorf("cancelled while waiting: %v, want exit 130", err)
	}
}

func asExit(err error, ec *exitCodeError) bool {
	e, ok := err.(exitCodeError)
	*ec = e
	return ok
}

func TestRunShardRefusals(t *testing.T) {
	sc := writeScenario(t, miniScenario)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"sim", []string{"run", sc, "--engine", "sim", "--shard", "0/2"}, "a simulated run is not split"},
		{"no target", []string{"run", sc, "--shard", "0/2"}, "needs --target"},
		{"sim start", []string{"run", sc, "--engine", "sim", "--start-at", "2026-12-01T10:00:00Z"}, "virtual time"},
		{"duplicate sweep value", []string{"compare", sc, "--engine", "sim", "--sweep", "proxy.limit_conn.per_key=1,2,1"}, "the value 1 twice"},
		{"axis twice", []string{"compare", sc, "--engine", "sim", "--sweep", "backend.workers=1,2", "--sweep", "backend.workers=4"}, "given twice"},
	} {
		t.Run(tc.name, func(t *testing.T) { runRefused(t, tc.want, append(tc.args, "-o", t.TempDir())...) })
	}
}
