package sim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"stampede/scenarios"
)

// fuzzEvents bounds the events each accepted scenario is simulated for.
const fuzzEvents = 20_000

// fuzzAlloc bounds what one bounded simulation may allocate in all.
const fuzzAlloc = 512 << 20

// FuzzParseAndSimulate feeds arbitrary files (and one --set) to the
// scenario parser and simulates each one it accepts for at most fuzzEvents
// events: no accepted scenario may panic the simulator, fail for any
// reason but the event limit, or allocate more than fuzzAlloc on the way.
func FuzzParseAndSimulate(f *testing.F) {
	files, _ := filepath.Glob("../scenarios/*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, "")
	}
	f.Add([]byte("name: z\nduration: 1m\nbackend: {routes: [{name: r, path: /, service: 0s}]}\ntenants: [{group: x, host: x.x, load: {model: closed, users: 50, think: 0s}}]\n"), "")
	f.Add([]byte("name: z\nduration: 1m\nbackend: {workers: 1, backlog: 0, routes: [{name: r, path: /, service: 1m}]}\nproxy: {limit_conn: {per_key: 1}}\ntenants: [{group: x, host: x.x, load: {model: closed, users: 9, think: 0s}}]\n"), "tenants.x.load.users=5000")
	f.Add([]byte("name: z\nduration: 1m\nbackend: {routes: [{name: r, path: /, service: 1ms}]}\nproxy: {limit_req: {rate: 1r/s, burst: 5}}\ntenants: [{group: x, count: 100, host: \"s{i}.x\", load: {stages: [{duration: 10s, rate: 50/s}, {duration: 10s, rate: 0/s}]}}]\n"), "")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		var sets []string
		if set != "" {
			sets = []string{set}
		}
		sc, err := scenarios.ParseWith("fuzz.yaml", data, sets)
		if err != nil {
			return
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err = Simulate(context.Background(), sc, nil, Options{MaxEvents: fuzzEvents})
		runtime.ReadMemStats(&after)
		if err != nil && !errors.Is(err, ErrEventLimit) {
			t.Fatalf("an accepted scenario fails to simulate: %v", err)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > fuzzAlloc {
			t.Fatalf("simulating %d events allocated %d MiB, over %d MiB", fuzzEvents, n>>20, fuzzAlloc>>20)
		}
	})
}
