package limit

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestTable checks the open-addressing index against a map under random
// inserts, finds and deletes, for both limiters' entries. Half the keys get
// one of three hashes, so they collide outright and crowd the last home
// slots: probe runs wrap around and deletions shift entries back.
func TestTable(t *testing.T) {
	t.Run("conn", func(t *testing.T) {
		checkTable(t, func(te tableEntry) (*connEntry, *tableEntry) {
			e := &connEntry{tableEntry: te}
			return e, &e.tableEntry
		})
	})
	t.Run("req", func(t *testing.T) {
		checkTable(t, func(te tableEntry) (*reqEntry, *tableEntry) {
			e := &reqEntry{tableEntry: te}
			return e, &e.tableEntry
		})
	})
}

// checkTable runs the random steps over the entries mk makes; mk returns
// an entry holding te and the address of its tableEntry, which head must
// read.
func checkTable[E entries, P tabled[E]](t *testing.T, mk func(te tableEntry) (P, *tableEntry)) {
	rng := rand.New(rand.NewPCG(7, 7))
	tb := newTable[E, P]()
	ref := map[string]P{}
	for step := 0; step < 20000; step++ {
		k := fmt.Sprintf("k%d", rng.IntN(300))
		if e, ok := ref[k]; ok && rng.IntN(2) == 0 {
			tb.delete(e)
			delete(ref, k)
			if got := tb.find(head(e).h, k); got != nil {
				t.Fatalf("step %d: find(%s) after delete = %p, want nil", step, k, got)
			}
		} else if !ok {
			h := uint64(rng.Uint32()) << 32 // anywhere
			if rng.IntN(2) == 0 {
				h = uint64(1<<31-1-rng.IntN(3)) << 32 // the last slots: runs wrap around
			}
			e, te := mk(tableEntry{key: k, h: h})
			if head(e) != te {
				t.Fatalf("step %d: the table reads %p for the entry at %p, want %p", step, head(e), e, te)
			}
			tb.insert(e)
			ref[k] = e
		} else if got := tb.find(head(e).h, k); got != e {
			t.Fatalf("step %d: find(%s) = %p, want %p", step, k, got, e)
		}
		if tb.n != len(ref) {
			t.Fatalf("step %d: n = %d, want %d", step, tb.n, len(ref))
		}
		if 2*tb.n > len(tb.slots) {
			t.Fatalf("step %d: %d entries in %d slots, want at most half full", step, tb.n, len(tb.slots))
		}
		if step%97 == 0 {
			held := 0
			for _, e := range tb.slots {
				if e != nil {
					held++
				}
			}
			if held != len(ref) {
				t.Fatalf("step %d: %d slots hold entries, want %d", step, held, len(ref))
			}
			for k, e := range ref {
				if got := tb.find(head(e).h, k); got != e {
					t.Fatalf("step %d: find(%s) = %p, want %p", step, k, got, e)
				}
			}
			if got := tb.find(3<<32, "absent"); got != nil {
				t.Fatalf("step %d: found an absent key", step)
			}
			// The hash of crowded keys, with a key nobody has.
			if got := tb.find(uint64(1<<31-1)<<32, "absent"); got != nil {
				t.Fatalf("step %d: found an absent key among colliding ones", step)
			}
		}
	}
}

// TestTableAllocs checks that a table that has grown to its size inserts,
// finds and deletes without allocating.
func TestTableAllocs(t *testing.T) {
	tb := newTable[connEntry]()
	es := make([]*connEntry, 100)
	for i := range es {
		es[i] = &connEntry{tableEntry: tableEntry{key: fmt.Sprintf("k%d", i), h: uint64(i%7) << 32}}
	}
	for _, e := range es {
		tb.insert(e)
	}
	for _, e := range es {
		tb.delete(e)
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, e := range es {
			tb.insert(e)
		}
		for _, e := range es {
			if tb.find(e.h, e.key) != e {
				t.Fatalf("find(%s) missed", e.key)
			}
		}
		for _, e := range es {
			tb.delete(e)
		}
	})
	if allocs != 0 {
		t.Fatalf("insert, find and delete of 100 keys: %v allocations, want 0", allocs)
	}
}
