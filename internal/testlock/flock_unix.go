//go:build unix

package testlock

import (
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

// haveFlock says the lock works here.
const haveFlock = true

func uid() string { return strconv.Itoa(os.Getuid()) }

// acquire takes the lock on the file name, exclusive or shared, trying until patience runs
// out, and returns its release, or false when the lock was not had.
func acquire(name string, exclusive bool, patience time.Duration) (release func(), ok bool) {
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	deadline := time.Now().Add(patience)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, true
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			return nil, false
		}
		<-time.After(5 * time.Millisecond)
	}
}
