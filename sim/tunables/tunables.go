// Package tunables is the simulator's run-time settings: the durations
// that are harvester-sim's start flags (the node grace period, a live
// migration's transfer, a VM's start delays) and that a test may change
// while the simulator runs, then restore. They live in one ConfigMap,
// each key a start flag's name; a key left out has the flag's value. The
// simulator acknowledges each content it applied, or says why it refused
// it, on the ConfigMap itself, as it does the fault patterns.
package tunables

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/harvester-kit/harvester-machine/sim/fault"
)

// The ConfigMap and its annotations.
const (
	Namespace = fault.Namespace
	ConfigMap = "harvester-sim-tunables"
	// AnnotationObserved is the digest (fault.Digest) of the data the
	// simulator now runs with.
	AnnotationObserved = "sim.harvesterhci.io/observed"
	// AnnotationRefused is "DIGEST: why" for data the simulator refused.
	AnnotationRefused = "sim.harvesterhci.io/refused"
)

// The names of the tunables: harvester-sim's start flags.
const (
	NodeMonitorGracePeriod = "node-monitor-grace-period"
	MigrationDuration      = "migration-duration"
	ScheduleDelay          = "schedule-delay"
	BootDelay              = "boot-delay"
	IPDelay                = "ip-delay"
)

// Names lists every tunable.
var Names = []string{NodeMonitorGracePeriod, MigrationDuration, ScheduleDelay, BootDelay, IPDelay}

// MinNodeMonitorGracePeriod is the shortest grace period the simulator
// accepts: the hosts renew their Lease every quarter of it.
const MinNodeMonitorGracePeriod = 4 * time.Second

// DefaultNodeMonitorGracePeriod is kube-controller-manager's own default
// (Kubernetes 1.34).
const DefaultNodeMonitorGracePeriod = 50 * time.Second

// Values are the tunables' values.
type Values struct {
	// NodeMonitorGracePeriod is kube-controller-manager's
	// --node-monitor-grace-period: how long after a host's last Lease
	// renewal its Node turns Ready Unknown.
	NodeMonitorGracePeriod time.Duration
	// MigrationDuration is how long a live migration's transfer runs.
	MigrationDuration time.Duration
	// ScheduleDelay is how long a VMI stays in Scheduling at least;
	// BootDelay is Scheduled to Running; IPDelay is Running to addresses.
	ScheduleDelay, BootDelay, IPDelay time.Duration
}

// field is the value of tunable name in v.
func (v *Values) field(name string) *time.Duration {
	switch name {
	case NodeMonitorGracePeriod:
		return &v.NodeMonitorGracePeriod
	case MigrationDuration:
		return &v.MigrationDuration
	case ScheduleDelay:
		return &v.ScheduleDelay
	case BootDelay:
		return &v.BootDelay
	case IPDelay:
		return &v.IPDelay
	}
	return nil
}

// Check says what is wrong with d as the value of tunable name (nil when
// nothing is), without the name.
func Check(name string, d time.Duration) error {
	switch {
	case d < 0:
		return fmt.Errorf("%s is negative: use 0 or more", d)
	case name == NodeMonitorGracePeriod && d < MinNodeMonitorGracePeriod:
		return fmt.Errorf("%s is too short: use %s or more (the hosts renew their Lease every quarter of it)", d, MinNodeMonitorGracePeriod)
	}
	return nil
}

// Validate returns every problem with v, each naming its flag.
func (v Values) Validate() error {
	var errs []error
	for _, name := range Names {
		if err := Check(name, *v.field(name)); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// Over returns start with data's values over it: each key present
// replaces its tunable's value. It returns every problem at once: a key
// that names no tunable, a value that is no duration or out of range.
func Over(start Values, data map[string]string) (Values, error) {
	v := start
	var errs []error
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		f := v.field(k)
		if f == nil {
			errs = append(errs, fmt.Errorf("%q is no tunable: use one of %s", k, strings.Join(Names, ", ")))
			continue
		}
		d, err := time.ParseDuration(strings.TrimSpace(data[k]))
		if err == nil {
			err = Check(k, d)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: %w", k, data[k], err))
			continue
		}
		*f = d
	}
	return v, errors.Join(errs...)
}

// Digest is the digest the simulator acknowledges data with.
func Digest(data map[string]string) string { return fault.Digest(data) }
