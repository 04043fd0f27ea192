package scenarios

import (
	"os"
	"testing"

	"stampede/fakebackend"
	"stampede/limit"
)

// FuzzParseAndBuild feeds the parser anything (and one --set); from every
// scenario it accepts the real backend and the real limiting policy must
// build, as the live engine builds them: a scenario the parser accepts
// never fails later, in one engine only, on a bound it did not check.
func FuzzParseAndBuild(f *testing.F) {
	addFileSeeds(f)
	f.Add([]byte(base), "backend.workers=65536")
	f.Add([]byte(base), "backend.routes.0.path=/_stampede/stats")
	f.Add([]byte(base), "backend.backlog=1048576")
	f.Add([]byte(base), "backend.threads=1000")
	f.Add([]byte(base), "backend.timeout=720h")
	f.Add([]byte(base), "backend.boot=1h")
	f.Add([]byte(base), "backend.max_requests=2147483647")
	f.Add([]byte(base), "proxy.limit_req={rate: 1r/m, burst: 100000, delay: 5}")
	f.Add([]byte(base), "proxy.limit_conn={per_key: 65535, status: 599, zone: 32k}")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		sc, err := parseFuzz(data, set)
		if err != nil {
			return
		}
		b, err := fakebackend.New(fakebackend.Options{Pool: sc.PoolConfig(), Routes: sc.Backend.Routes, TimeScale: sc.TimeScale, Seed: sc.Seed})
		if err != nil {
			t.Fatalf("an accepted scenario's backend does not build: %v", err)
		}
		b.Close()
		if _, err := limit.NewPolicy(sc.Proxy.Limits); err != nil {
			t.Fatalf("an accepted scenario's limiting policy does not build: %v", err)
		}
	})
}

// addFileSeeds seeds a fuzz test of the parser with every scenario of the
// library and testdata/everything.yaml, without a --set.
func addFileSeeds(f *testing.F) {
	for _, name := range append(library(f), "testdata/everything.yaml") {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "")
	}
}

// parseFuzz parses a fuzz input: a file and at most one --set.
func parseFuzz(data []byte, set string) (*Scenario, error) {
	var sets []string
	if set != "" {
		sets = []string{set}
	}
	return ParseWith("fuzz.yaml", data, sets)
}
