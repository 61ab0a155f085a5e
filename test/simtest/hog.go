package simtest

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// CPUHog keeps every core of the machine busy, as a shared CI runner or a
// loaded Rancher node is: one goroutine per CPU spins until ctx ends, stop
// is called, or at most limit has passed (it always stops by itself). stop
// ends it and returns once every goroutine has stopped. The processes the
// test starts (rancher-machine, the driver, the simulator) compete with it
// for the CPUs.
func CPUHog(ctx context.Context, limit time.Duration) (stop func()) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	n := runtime.NumCPU()
	if runtime.GOMAXPROCS(0) < n {
		n = runtime.GOMAXPROCS(0)
	}
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spin(ctx)
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// spin burns CPU until ctx ends, checking it every few milliseconds.
func spin(ctx context.Context) {
	x := uint64(1)
	for ctx.Err() == nil {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink.Store(x)
}

// sink keeps the spinning loop from being optimised away.
var sink atomic.Uint64
