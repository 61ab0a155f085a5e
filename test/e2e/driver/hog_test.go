package driver_test

import (
	"context"
	"testing"
	"time"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// TestUnderCPUHog runs the soak and the API-server fault tests again with
// a busy loop on every core (simtest.CPUHog), as on a shared CI runner or a
// loaded Rancher node: every create and rm succeeds, nothing is left, and
// no plugin process outlives its rancher-machine. The hog stops by itself
// at the test binary's deadline at the latest. `make test` leaves it out
// (it keeps every core busy on purpose); `make soak`, which CI runs, takes
// it. Both parts are sized by soakEnv as TestConcurrentMachines and
// TestAPIServerFault are (faultMomentsFor).
func TestUnderCPUHog(t *testing.T) {
	limit := 30 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = time.Until(d)
	}
	stop := simtest.CPUHog(context.Background(), limit)
	defer stop()
	t.Run("soak", func(t *testing.T) { soak(t, "e2e-hogscale") })
	t.Run("APIServerFault", func(t *testing.T) { apiServerFault(t, faultMomentsFor(soakSizeFromEnv(t))...) })
}
