package limit

import (
	"fmt"
	"math"
)

// ParseSize reads a zone size as nginx does: bytes, or with k or m (e.g. "10m").
// K and M are accepted too; both mean powers of 1024.
func ParseSize(s string) (int64, error) {
	digits, scale := s, int64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'k', 'K':
			digits, scale = s[:len(s)-1], 1024
		case 'm', 'M':
			digits, scale = s[:len(s)-1], 1024*1024
		}
	}
	n, ok := atoi(digits)
	if !ok || n > math.MaxInt64/scale {
		return 0, fmt.Errorf("%q is not a size (want bytes, or a number with k or m, e.g. 10m)", s)
	}
	return n * scale, nil
}

// Zone memory model.
//
// nginx keeps limit_conn and limit_req state in a shared-memory slab pool
// (src/core/ngx_slab.c, 1.22). The model here counts its bytes as it does,
// so that a zone holds as many keys of one size class as nginx's:
//
//   - the pool starts with its header (ngx_slab_pool_t, 200 bytes on
//     64-bit Linux) and, for each of the 9 size classes from 8 to 2048
//     bytes, a list head and a statistics record (24 + 32 bytes): 704
//     bytes. What is left is split into 4 KiB pages, each with a 24-byte
//     descriptor: pages = (size − 704) / (4096 + 24), fewer if the first
//     page, aligned to 4 KiB after the descriptors, leaves room for less.
//     32k gives 7 pages, 64k 15, 1m 254, 10m 2544.
//   - a node is a red-black tree node up to its color field (32 bytes),
//     the module's own head and the key: limit_conn's head is 4 bytes
//     (color, key length, count), limit_req's 48 (color, dummy, length,
//     LRU links, last, excess, count). The slab allocator rounds it up to a
//     power of two (at least 8); over half a page, to whole pages.
//   - each zone's init allocates its tree root and a log string from the
//     pool before any node: limit_conn 64 + 64 bytes (both in the 64-byte
//     class its nodes use for keys up to 28 bytes); limit_req 128 bytes
//     (its root, in the 128-byte class of nodes with keys up to 48 bytes)
//     and a 64-byte string that takes a page of its own, as no node of
//     limit_req is that small.
//
// So limit_conn holds 7·64 − 2 = 446 keys of up to 28 bytes in 32k,
// 15·64 − 2 = 958 in 64k, 16,254 in 1m and 162,814 in 10m; limit_req holds
// 6·32 − 1 = 191 keys of up to 48 bytes in 32k, 447 in 64k, 8,095 in 1m
// and 81,375 in 10m: the figures nginx 1.22 gives here, filling a zone
// with distinct keys (10m limit_conn from the arithmetic, whose page count
// 10m limit_req measures). A zone that mixes size classes is counted by
// bytes, not by the pages each class holds, which nginx's allocator does.
const (
	pageSize       = 4096
	pageDescriptor = 24
	// slabHeader is ngx_slab_pool_t and the 9 size classes' list heads
	// and statistics ahead of the page descriptors.
	slabHeader   = 200 + 9*(24+32)
	connNodeHead = 32 + 4
	reqNodeHead  = 32 + 48
	// connZoneInit and reqZoneInit are what each zone's init takes from
	// the pool before its first node.
	connZoneInit = 64 + 64
	reqZoneInit  = 128 + pageSize
	// MinZone is the smallest zone nginx accepts: 8 pages.
	MinZone = 8 * pageSize
)

// zonePages is how many pages a slab pool of size bytes has for
// allocations.
func zonePages(size int64) int64 {
	pages := (size - slabHeader) / (pageSize + pageDescriptor)
	if pages < 1 {
		return 1
	}
	start := (slabHeader + pages*pageDescriptor + pageSize - 1) / pageSize * pageSize
	if fit := (size - start) / pageSize; fit < pages {
		pages = fit
	}
	return max(pages, 1)
}

// connZoneBudget and reqZoneBudget are how many bytes of nodes a
// limit_conn or limit_req zone of size bytes can hold.
func connZoneBudget(size int64) int64 { return zonePages(size)*pageSize - connZoneInit }
func reqZoneBudget(size int64) int64  { return zonePages(size)*pageSize - reqZoneInit }

// nodeCost is what the slab allocator spends on a node of n bytes.
func nodeCost(n int) int64 {
	if n > pageSize/2 {
		return int64((n + pageSize - 1) / pageSize * pageSize)
	}
	c := 8
	for c < n {
		c <<= 1
	}
	return int64(c)
}
