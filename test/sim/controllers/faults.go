package controllers

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// Fault ConfigMap: namespace, name and keys. The VM keys hold
// newline-separated path.Match patterns of "namespace/name" of
// VirtualMachines; exhaust-pool holds patterns of IPPool names;
// delay-allocation holds "namespace/name-pattern duration" lines for
// LoadBalancers.
const (
	FaultsNamespace       = "harvester-system"
	FaultsConfigMap       = "harvester-sim-faults"
	FaultStuckScheduling  = "stuck-scheduling"
	FaultNoIP             = "no-ip"
	FaultExhaustPool      = "exhaust-pool"
	FaultDelayAllocation  = "delay-allocation"
	faultConfigMapKeyPath = FaultsNamespace + "/" + FaultsConfigMap
)

// delayRule delays the address of LoadBalancers matching pattern.
type delayRule struct {
	pattern string
	delay   time.Duration
}

// faults is the parsed content of the fault ConfigMap.
type faults struct {
	patterns map[string][]string // fault key -> patterns
	delays   []delayRule
	problems []string // lines that are not valid
}

// parseFaults reads the fault patterns from ConfigMap data. Invalid lines
// are kept out and reported in problems.
func parseFaults(data map[string]string) faults {
	f := faults{patterns: map[string][]string{}}
	for _, key := range []string{FaultStuckScheduling, FaultNoIP, FaultExhaustPool, FaultDelayAllocation} {
		for _, line := range strings.Split(data[key], "\n") {
			p := strings.TrimSpace(line)
			if p == "" || strings.HasPrefix(p, "#") {
				continue
			}
			var delay time.Duration
			if key == FaultDelayAllocation {
				fields := strings.Fields(p)
				d, err := time.ParseDuration(fields[len(fields)-1])
				if len(fields) != 2 || err != nil || d < 0 {
					f.problems = append(f.problems, fmt.Sprintf("%s: line %q: want NAMESPACE/NAME-GLOB DURATION (e.g. default/* 5s)", key, p))
					continue
				}
				p, delay = fields[0], d
			}
			if _, err := path.Match(p, ""); err != nil {
				f.problems = append(f.problems, fmt.Sprintf("%s: pattern %q: %v", key, p, err))
				continue
			}
			if key == FaultDelayAllocation {
				f.delays = append(f.delays, delayRule{pattern: p, delay: delay})
				continue
			}
			f.patterns[key] = append(f.patterns[key], p)
		}
	}
	return f
}

// match returns the first pattern of fault key that matches the VM
// "namespace/name", or "" when none does.
func (f faults) match(key, namespace, vmName string) string {
	return f.matchName(key, namespace+"/"+vmName)
}

// matchName returns the first pattern of fault key matching target.
func (f faults) matchName(key, target string) string {
	for _, p := range f.patterns[key] {
		if ok, _ := path.Match(p, target); ok {
			return p
		}
	}
	return ""
}

// allocationDelay is the delay the first matching rule gives the
// LoadBalancer "namespace/name" (0: none).
func (f faults) allocationDelay(namespace, name string) time.Duration {
	for _, r := range f.delays {
		if ok, _ := path.Match(r.pattern, namespace+"/"+name); ok {
			return r.delay
		}
	}
	return 0
}
