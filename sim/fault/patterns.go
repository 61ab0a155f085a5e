package fault

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
	"time"
)

// ConfigMapKey is the ConfigMap's "namespace/name".
const ConfigMapKey = Namespace + "/" + ConfigMap

// Patterns is the parsed content of the fault ConfigMap: path.Match
// patterns of "namespace/name" of VirtualMachines per VM fault, of IPPool
// names for ExhaustPool, of host (Node) names for HostDown, and "namespace/name-pattern duration" lines of
// LoadBalancers for DelayAllocation.
type Patterns struct {
	patterns map[string][]string // fault key -> patterns
	delays   []delayRule
	problems []string // lines that are not valid
}

// delayRule delays the address of LoadBalancers matching pattern.
type delayRule struct {
	pattern string
	delay   time.Duration
}

// ParsePatterns reads the fault patterns from ConfigMap data. Invalid
// patterns are kept out and reported by Problems.
func ParsePatterns(data map[string]string) Patterns {
	f := Patterns{patterns: map[string][]string{}}
	for _, key := range append(slices.Clone(VMFaults), ExhaustPool, DelayAllocation, DHCPAgentDown, HostDown) {
		for _, line := range strings.Split(data[key], "\n") {
			p := strings.TrimSpace(line)
			if p == "" || strings.HasPrefix(p, "#") {
				continue
			}
			var delay time.Duration
			if key == DelayAllocation {
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
			if key == DelayAllocation {
				f.delays = append(f.delays, delayRule{pattern: p, delay: delay})
				continue
			}
			f.patterns[key] = append(f.patterns[key], p)
		}
	}
	return f
}

// Match returns the first pattern of fault key that matches the VM
// "namespace/name", or "" when none does.
func (f Patterns) Match(key, namespace, vmName string) string {
	return f.MatchName(key, namespace+"/"+vmName)
}

// MatchName returns the first pattern of fault key matching target.
func (f Patterns) MatchName(key, target string) string {
	for _, p := range f.patterns[key] {
		if ok, _ := path.Match(p, target); ok {
			return p
		}
	}
	return ""
}

// AllocationDelay is the delay the first matching rule gives the
// LoadBalancer "namespace/name" (0: none).
func (f Patterns) AllocationDelay(namespace, name string) time.Duration {
	for _, r := range f.delays {
		if ok, _ := path.Match(r.pattern, namespace+"/"+name); ok {
			return r.delay
		}
	}
	return 0
}

// Problems lists the patterns that are not valid globs.
func (f Patterns) Problems() []string { return f.problems }

// Digest identifies fault ConfigMap data (AnnotationObserved).
func Digest(data map[string]string) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%q=%q\n", k, data[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
