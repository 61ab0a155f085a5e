package sim_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/harvester-kit/harvester-machine/test/harness"
)

// The tests and everything they start run in the harness's private network
// namespace: no default route, a connect outside loopback and the guest
// network fails at once, and the simulator shares the namespace.
func TestNothingLeavesTheMachine(t *testing.T) {
	harness.NeedGuests(t)
	if err := harness.Guard(); err != nil {
		t.Fatal(err)
	}
	self, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	host, err := os.Readlink("/proc/1/ns/net")
	if err == nil && host == self {
		t.Errorf("the tests run in the network namespace of process 1 (%s)", host)
	}
	simNS, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", simulator.PID()))
	if err != nil {
		t.Fatal(err)
	}
	if simNS != self {
		t.Errorf("harvester-sim runs in network namespace %s, the tests in %s", simNS, self)
	}
}
