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
// it. Both parts are sized by soakEnv: the short soak (a `go test` by
// hand) hits each command with each fault once its watches run (the
// moment "waits"); the long one (`make soak`) at both moments, as
// TestAPIServerFault does.
func TestUnderCPUHog(t *testing.T) {
	limit := 30 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = time.Until(d)
	}
	stop := simtest.CPUHog(context.Background(), limit)
	defer stop()
	t.Run("soak", func(t *testing.T) { soak(t, "e2e-hogscale") })
	t.Run("APIServerFault", func(t *testing.T) { apiServerFault(t, hogFaultMoments(soakSizeFromEnv(t))...) })
}

// hogFaultMoments are the moments the hog's fault tests hit: the long soak
// takes all of faultMoments, the short one the moment a command's watches
// run ("waits"), where a restart breaks the most at once.
func hogFaultMoments(size soakSize) []string {
	if size == longSoak {
		return faultMoments
	}
	return []string{"waits"}
}
