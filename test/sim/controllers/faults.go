package controllers

import (
	"fmt"
	"path"
	"strings"
)

// Fault ConfigMap: namespace, name and keys. Each key holds newline-separated
// path.Match patterns of "namespace/name" of VirtualMachines.
const (
	FaultsNamespace       = "harvester-system"
	FaultsConfigMap       = "harvester-sim-faults"
	FaultStuckScheduling  = "stuck-scheduling"
	FaultNoIP             = "no-ip"
	faultConfigMapKeyPath = FaultsNamespace + "/" + FaultsConfigMap
)

// faults is the parsed content of the fault ConfigMap.
type faults struct {
	patterns map[string][]string // fault key -> patterns
	problems []string            // patterns that are not valid globs
}

// parseFaults reads the fault patterns from ConfigMap data. Invalid patterns
// are kept out and reported in problems.
func parseFaults(data map[string]string) faults {
	f := faults{patterns: map[string][]string{}}
	for _, key := range []string{FaultStuckScheduling, FaultNoIP} {
		for _, line := range strings.Split(data[key], "\n") {
			p := strings.TrimSpace(line)
			if p == "" || strings.HasPrefix(p, "#") {
				continue
			}
			if _, err := path.Match(p, ""); err != nil {
				f.problems = append(f.problems, fmt.Sprintf("%s: pattern %q: %v", key, p, err))
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
	target := namespace + "/" + vmName
	for _, p := range f.patterns[key] {
		if ok, _ := path.Match(p, target); ok {
			return p
		}
	}
	return ""
}
