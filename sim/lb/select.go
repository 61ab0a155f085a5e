// Stand-in for Harvester's load balancer controller, load-balancer-harvester
// v1.8.1: the backend servers a LoadBalancer selects. It follows
// https://github.com/harvester/load-balancer-harvester/blob/v1.8.1/pkg/utils/selector.go.

package lb

import (
	"fmt"
	"slices"
)

// NoAllocatorError is Harvester's message for a named pool that does not exist.
func NoAllocatorError(pool string) error { return fmt.Errorf("fail to get allocator %s", pool) }

// SelectsBackend reports whether a VMI with labels is one of the backend
// servers sel selects: every key present with one of its values. An empty
// selector selects nothing.
func SelectsBackend(sel map[string][]string, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for key, values := range sel {
		v, ok := labels[key]
		if !ok || (len(values) > 0 && !slices.Contains(values, v)) {
			return false
		}
	}
	return true
}
