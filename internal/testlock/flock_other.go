//go:build !unix

package testlock

import "time"

// haveFlock says the lock works here.
const haveFlock = false

func uid() string { return "0" }

func acquire(name string, exclusive bool, patience time.Duration) (release func(), ok bool) {
	return nil, false
}
