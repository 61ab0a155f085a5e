package fault

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"sort"
	"strings"
)

// ConfigMapKey is the ConfigMap's "namespace/name".
const ConfigMapKey = Namespace + "/" + ConfigMap

// Patterns is the parsed content of the fault ConfigMap: path.Match
// patterns of "namespace/name" of VirtualMachines per VM fault.
type Patterns struct {
	patterns map[string][]string // fault key -> patterns
	problems []string            // patterns that are not valid globs
}

// ParsePatterns reads the fault patterns from ConfigMap data. Invalid
// patterns are kept out and reported by Problems.
func ParsePatterns(data map[string]string) Patterns {
	f := Patterns{patterns: map[string][]string{}}
	for _, key := range []string{StuckScheduling, NoIP} {
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

// Match returns the first pattern of fault key that matches the VM
// "namespace/name", or "" when none does.
func (f Patterns) Match(key, namespace, vmName string) string {
	target := namespace + "/" + vmName
	for _, p := range f.patterns[key] {
		if ok, _ := path.Match(p, target); ok {
			return p
		}
	}
	return ""
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
