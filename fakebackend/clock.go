package fakebackend

import "stampede/clock"

// Clock returns the model clock the backend plays its pool on, whose model
// time 0 is New's. A proxy in front of the backend that reads the same
// clock (limiterproxy.Handler's Clock) agrees with it on model time.
func (b *Backend) Clock() clock.ModelClock { return b.clock }
