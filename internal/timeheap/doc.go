// Package timeheap is a min-heap of items ordered by a time each carries:
// the waiters of a timer by deadline, the running jobs of a worker pool by
// the time their work ends.
//
// It never reads the clock: the times are the caller's.
package timeheap
