package fault

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
)

var poolGVR = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "ippools"}

// SetExhaustPool makes the IPPools whose names match pattern (a glob) hand out
// no address (or, with remove, ends that); it returns once the matching
// pools' status shows it. Allocations read the fault at once.
func SetExhaustPool(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, pattern string, remove bool) error {
	if _, err := path.Match(pattern, ""); err != nil || strings.ContainsAny(pattern, "/ ") {
		return fmt.Errorf("fault %s: pattern %q must be an IPPool name with optional * ? [] globs", ExhaustPool, pattern)
	}
	if err := SetLine(ctx, kube, ExhaustPool, pattern, remove); err != nil {
		return err
	}
	// Watch every pool: done once each matching pool's status shows it.
	err := untilEvery(ctx, dyn.Resource(poolGVR), func(p *unstructured.Unstructured) bool {
		m, _ := path.Match(pattern, p.GetName())
		return !m || poolShowsExhausted(*p, !remove)
	})
	if err != nil {
		return fmt.Errorf("fault %s %s: pool status does not show it after 30s: %w", ExhaustPool, pattern, err)
	}
	return nil
}

// poolShowsExhausted reports whether p's status matches the wanted state:
// available 0 when exhausted, else total minus what is allocated.
func poolShowsExhausted(p unstructured.Unstructured, exhausted bool) bool {
	total, _, _ := unstructured.NestedInt64(p.Object, "status", "total")
	available, _, _ := unstructured.NestedInt64(p.Object, "status", "available")
	allocated, _, _ := unstructured.NestedMap(p.Object, "status", "allocated")
	if exhausted {
		return available == 0
	}
	return available == max(total-int64(len(allocated)), 0)
}

// SetDelayAllocation makes LoadBalancers matching pattern (NAMESPACE/NAME
// glob) get their address only delay after their creation (with remove,
// ends that). Allocations read the fault at once, so it is in effect when
// this returns.
func SetDelayAllocation(ctx context.Context, kube kubernetes.Interface, pattern string, delay time.Duration, remove bool) error {
	if _, err := path.Match(pattern, ""); err != nil || !strings.Contains(pattern, "/") || strings.Contains(pattern, " ") {
		return fmt.Errorf("fault %s: pattern %q must be NAMESPACE/NAME with optional * ? [] globs", DelayAllocation, pattern)
	}
	if !remove && delay <= 0 {
		return fmt.Errorf("fault %s: --delay %s: use a positive duration such as 5s", DelayAllocation, delay)
	}
	return SetLine(ctx, kube, DelayAllocation, pattern+" "+delay.String(), remove)
}
