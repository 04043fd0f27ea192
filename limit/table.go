package limit

import "unsafe"

// tableEntry is what a table knows of an entry: its key and the key's hash.
// Every entry type a table holds embeds one as its first field.
type tableEntry struct {
	key string
	h   uint64
}

// entry makes a type that embeds a tableEntry satisfy tabled.
func (e *tableEntry) entry() *tableEntry { return e }

// tabled is the constraint on a table's entries: pointers to an E that
// embeds a tableEntry.
type tabled[E any] interface {
	*E
	entry() *tableEntry
}

// The table reads an entry's tableEntry straight through the pointer to the
// entry rather than by calling entry: a method of a type parameter is
// called through the instantiation's dictionary, which costs the limiters
// about a tenth of their speed. That is sound only while each entry type
// starts with its tableEntry; these fail to compile when one does not.
var (
	_ [0]struct{} = [unsafe.Offsetof(connEntry{}.tableEntry)]struct{}{}
	_ [0]struct{} = [unsafe.Offsetof(reqEntry{}.tableEntry)]struct{}{}
)

// head returns e's tableEntry.
func head[E any, P tabled[E]](e P) *tableEntry {
	return (*tableEntry)(unsafe.Pointer(e))
}

// table indexes entries by key hash: open addressing, linear probing, at
// most half full. It is cheaper than a map for the limiters because the
// hash is computed once per request, for the shard and the slot alike, and
// it holds the limiters' own entries, so it allocates only when it grows.
//
// The zero table is not usable: make one with newTable. A table is not safe
// for concurrent use; each limiter shard guards its own with its mutex.
type table[E any, P tabled[E]] struct {
	slots []P // a power of two long
	n     int // entries in slots
}

func newTable[E any, P tabled[E]]() table[E, P] {
	return table[E, P]{slots: make([]P, 16)}
}

// home is the slot where an entry with hash h is first looked for. The
// low bits chose the shard, so the slot comes from the high ones.
func (t *table[E, P]) home(h uint64) int {
	return int((h >> 32) & uint64(len(t.slots)-1))
}

// find returns the entry for key, whose hash is h, or nil.
func (t *table[E, P]) find(h uint64, key string) P {
	mask := len(t.slots) - 1
	for i := t.home(h); ; i = (i + 1) & mask {
		e := t.slots[i]
		if e == nil {
			return nil
		}
		if te := head(e); te.h == h && te.key == key {
			return e
		}
	}
}

// insert adds e, whose key must not be in the table yet, first doubling the
// slots when they would be more than half full.
func (t *table[E, P]) insert(e P) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]P, 2*len(old))
		for _, o := range old {
			if o != nil {
				t.place(o)
			}
		}
	}
	t.place(e)
	t.n++
}

func (t *table[E, P]) place(e P) { t.slots[t.probe(head(e).h, nil)] = e }

// probe returns the first slot from hash h's home on that holds want
// (nil: the first free one); the table must have one.
func (t *table[E, P]) probe(h uint64, want P) int {
	mask := len(t.slots) - 1
	i := t.home(h)
	for t.slots[i] != want {
		i = (i + 1) & mask
	}
	return i
}

// delete removes e, which must be in the table, moving later entries of its
// probe run back so that every entry stays reachable from its home slot.
func (t *table[E, P]) delete(e P) {
	mask := len(t.slots) - 1
	i := t.probe(head(e).h, e)
	t.slots[i] = nil
	t.n--
	for j := (i + 1) & mask; t.slots[j] != nil; j = (j + 1) & mask {
		k := t.home(head(t.slots[j]).h)
		// Move slots[j] into the hole at i unless its home lies
		// cyclically in (i, j], where it is still reachable.
		if (i <= j && (k <= i || k > j)) || (i > j && k <= i && k > j) {
			t.slots[i], t.slots[j] = t.slots[j], nil
			i = j
		}
	}
}
