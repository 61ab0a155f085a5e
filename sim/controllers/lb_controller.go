// Stand-in for Harvester's load balancer controller, load-balancer-harvester
// v1.8.1: addresses for LoadBalancers from IP pools. It follows
// https://github.com/harvester/load-balancer-harvester/blob/v1.8.1/pkg/controller/loadbalancer/controller.go.

package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/harvester-kit/harvester-machine/internal/lbapi"
	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/sim/lb"
)

var (
	gvrLB   = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "loadbalancers"}
	gvrPool = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "ippools"}
)

// Harvester retries a LoadBalancer that found no address every second.
const lbRetry = time.Second

// poolKeyPrefix marks IPPool keys in the load balancer queue: LoadBalancers
// and pools share one worker, so pool status is written by one writer.
const poolKeyPrefix = "ippool:"

func fromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

// reconcileLoadBalancer plays Harvester's load balancer controller for one
// LoadBalancer ("ns/name") or IPPool (poolKeyPrefix + name).
func (s *sim) reconcileLoadBalancer(ctx context.Context, key string) (time.Duration, error) {
	if name, ok := strings.CutPrefix(key, poolKeyPrefix); ok {
		return 0, s.reconcilePool(ctx, name)
	}
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	u := getCached(s.lbs, ns, name)
	if u == nil {
		return 0, nil
	}
	var l lbapi.LoadBalancer
	if err := fromUnstructured(u, &l); err != nil {
		return 0, fmt.Errorf("decode LoadBalancer %s: %w", key, err)
	}
	if l.DeletionTimestamp != nil {
		return 0, s.finalizeLoadBalancer(ctx, &l)
	}
	if !hasString(l.Finalizers, lbapi.Finalizer) {
		_, err := s.updateMeta(ctx, gvrLB, ns, name, func(u *unstructured.Unstructured) bool {
			u.SetFinalizers(append(u.GetFinalizers(), lbapi.Finalizer))
			return true
		})
		return 0, err
	}
	f := s.faults() // current: `harvester-sim fault` returns once this cache acknowledged it
	if d := f.AllocationDelay(ns, name); d > 0 {
		if wait := time.Until(l.CreationTimestamp.Add(d)); wait > 0 {
			return wait, nil
		}
	}
	status, requeue, err := s.loadBalancerStatus(ctx, &l, f)
	if err != nil {
		return 0, err
	}
	if err := s.writeLoadBalancer(ctx, u, l.Status, status); err != nil {
		return 0, err
	}
	return requeue, nil
}

// loadBalancerStatus is the status Harvester would give l now.
func (s *sim) loadBalancerStatus(ctx context.Context, l *lbapi.LoadBalancer, f fault.Patterns) (lbapi.LoadBalancerStatus, time.Duration, error) {
	st := l.Status.Clone()
	now := time.Now()
	if l.Spec.IPAM == lbapi.IPAMDHCP {
		// An address from a pool (ipam was pool before) goes back.
		if err := s.releaseAddresses(ctx, l.Namespace+"/"+l.Name); err != nil {
			return st, 0, err
		}
		st.AllocatedAddress = lbapi.AllocatedAddress{IP: lbapi.DHCPAddress}
	} else {
		addr, err := s.allocate(ctx, l, f)
		if err != nil {
			var apiErr apierrors.APIStatus
			if errors.As(err, &apiErr) {
				return st, 0, err
			}
			st.AllocatedAddress = lbapi.AllocatedAddress{}
			st.Conditions = setCondition(st.Conditions, lbapi.ConditionReady, corev1.ConditionFalse, err.Error(), now)
			return st, lbRetry, nil
		}
		st.AllocatedAddress = addr
	}
	if l.Spec.WorkloadType == lbapi.WorkloadCluster {
		// The guest's cloud provider writes status.address.
		st.Conditions = setCondition(st.Conditions, lbapi.ConditionReady, corev1.ConditionTrue, "", now)
		return st, 0, nil
	}
	st.Address = st.AllocatedAddress.IP
	st.BackendServers = s.backendServers(l)
	if len(st.BackendServers) == 0 {
		st.Conditions = setCondition(st.Conditions, lbapi.ConditionReady, corev1.ConditionFalse, "no running backend servers", now)
		return st, 0, nil
	}
	st.Conditions = setCondition(st.Conditions, lbapi.ConditionReady, corev1.ConditionTrue, "", now)
	return st, 0, nil
}

// allocate finds the pool for l and an address in it, recording the
// allocation in the pool's status first. Errors that are not API errors
// are Harvester's messages for the Ready condition.
func (s *sim) allocate(ctx context.Context, l *lbapi.LoadBalancer, f fault.Patterns) (lbapi.AllocatedAddress, error) {
	owner := l.Namespace + "/" + l.Name
	pools, err := s.cachedPools()
	if err != nil {
		return lbapi.AllocatedAddress{}, err
	}
	var chosen *lbapi.IPPool
	for i := range pools {
		if pools[i].Status.Allocated != nil && containsValue(pools[i].Status.Allocated, owner) {
			chosen = &pools[i]
		}
	}
	switch {
	case chosen != nil:
	case l.Spec.IPPool != "":
		for i := range pools {
			if pools[i].Name == l.Spec.IPPool {
				chosen = &pools[i]
			}
		}
		if chosen == nil {
			return lbapi.AllocatedAddress{}, lb.NoAllocatorError(l.Spec.IPPool)
		}
	default:
		if chosen, err = lb.SelectPool(pools, l); err != nil {
			return lbapi.AllocatedAddress{}, err
		}
	}
	// An address the cached pool already records for l is l's: no read.
	// (A pool that changes since enqueues every LoadBalancer again.)
	exhausted := f.MatchName(fault.ExhaustPool, chosen.Name) != ""
	if containsValue(chosen.Status.Allocated, owner) {
		held := *chosen
		held.Status = chosen.Status.Clone()
		if addr, err := lb.Allocate(&held, owner, exhausted); err == nil && equality.Semantic.DeepEqual(held.Status, chosen.Status) {
			return addr, nil
		}
	}
	var addr lbapi.AllocatedAddress
	err = s.updatePoolStatus(ctx, chosen.Name, func(p *lbapi.IPPool) error {
		var err error
		addr, err = lb.Allocate(p, owner, exhausted)
		return err
	})
	return addr, err
}

// finalizeLoadBalancer returns l's address into its pool's history, then
// lets the object go.
func (s *sim) finalizeLoadBalancer(ctx context.Context, l *lbapi.LoadBalancer) error {
	if !hasString(l.Finalizers, lbapi.Finalizer) {
		return nil
	}
	if err := s.releaseAddresses(ctx, l.Namespace+"/"+l.Name); err != nil {
		return err
	}
	_, err := s.updateMeta(ctx, gvrLB, l.Namespace, l.Name, func(u *unstructured.Unstructured) bool {
		u.SetFinalizers(without(u.GetFinalizers(), lbapi.Finalizer))
		return true
	})
	if apierrors.IsNotFound(errors.Unwrap(err)) {
		return nil
	}
	return err
}

// releaseAddresses returns every address owner holds into its pool's
// allocatedHistory.
func (s *sim) releaseAddresses(ctx context.Context, owner string) error {
	pools, err := s.cachedPools()
	if err != nil {
		return err
	}
	for _, p := range pools {
		if !containsValue(p.Status.Allocated, owner) {
			continue
		}
		err := s.updatePoolStatus(ctx, p.Name, func(p *lbapi.IPPool) error {
			lb.Release(p, owner)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// reconcilePool keeps a pool's counts (and the global-pool label) current.
func (s *sim) reconcilePool(ctx context.Context, name string) error {
	obj, err := s.pools.Get(name) // cluster scoped: no namespace in the key
	if err != nil {
		return nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetDeletionTimestamp() != nil {
		return nil
	}
	var p lbapi.IPPool
	if err := fromUnstructured(u, &p); err != nil {
		return fmt.Errorf("decode IPPool %s: %w", name, err)
	}
	if lb.IsGlobalPool(&p) && p.Labels[lbapi.LabelGlobalPool] != "true" {
		_, err := s.updateMeta(ctx, gvrPool, "", name, func(u *unstructured.Unstructured) bool {
			l := u.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			l[lbapi.LabelGlobalPool] = "true"
			u.SetLabels(l)
			return true
		})
		return err
	}
	exhausted := s.faults().MatchName(fault.ExhaustPool, name) != ""
	err = s.updatePoolStatus(ctx, name, func(p *lbapi.IPPool) error { return lb.Counts(p, exhausted) })
	if err != nil && !isAPIError(err) {
		if s.state.once("ippool/"+name, "problem", err.Error()) {
			s.log.Warn("IPPool cannot be counted", "pool", name, "err", err)
		}
		return nil
	}
	// A change of pools may let waiting LoadBalancers get an address.
	s.enqueueNamespace(s.lbQ, "", s.lbKeys)
	return err
}

func isAPIError(err error) bool {
	var apiErr apierrors.APIStatus
	return errors.As(err, &apiErr)
}

// updatePoolStatus reads the pool live, applies change and writes the
// status when it changed; a conflict returns as an error so the key is retried.
func (s *sim) updatePoolStatus(ctx context.Context, name string, change func(*lbapi.IPPool) error) error {
	cur, err := s.dyn.Resource(gvrPool).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get IPPool %s: %w", name, err)
	}
	var p lbapi.IPPool
	if err := fromUnstructured(cur, &p); err != nil {
		return fmt.Errorf("decode IPPool %s: %w", name, err)
	}
	before := p.Status.Clone()
	if err := change(&p); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(before, p.Status) {
		return nil
	}
	m, err := toUnstructured(&p.Status)
	if err != nil {
		return err
	}
	cur.Object["status"] = m
	if _, err := s.dyn.Resource(gvrPool).UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update status of IPPool %s: %w", name, err)
	}
	return nil
}

// writeLoadBalancer writes status with the whole object: Harvester's
// LoadBalancer has no status subresource.
func (s *sim) writeLoadBalancer(ctx context.Context, u *unstructured.Unstructured, old, status lbapi.LoadBalancerStatus) error {
	if equality.Semantic.DeepEqual(old, status) {
		return nil
	}
	m, err := toUnstructured(&status)
	if err != nil {
		return err
	}
	out := u.DeepCopy()
	out.Object["status"] = m
	if _, err := s.dyn.Resource(gvrLB).Namespace(u.GetNamespace()).Update(ctx, out, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update LoadBalancer %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// backendServers lists the addresses of the running VMIs in l's namespace
// that its backendServerSelector selects, sorted.
func (s *sim) backendServers(l *lbapi.LoadBalancer) []string {
	list, _ := s.vmis.ByNamespace(l.Namespace).List(labels.Everything())
	var out []string
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok || !lb.SelectsBackend(l.Spec.BackendServerSelector, u.GetLabels()) {
			continue
		}
		if phase, _, _ := unstructured.NestedString(u.Object, "status", "phase"); phase != "Running" {
			continue
		}
		ifaces, _, _ := unstructured.NestedSlice(u.Object, "status", "interfaces")
		for _, i := range ifaces {
			if m, ok := i.(map[string]any); ok {
				if ip, _ := m["ipAddress"].(string); ip != "" {
					out = append(out, ip)
					break
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func (s *sim) cachedPools() ([]lbapi.IPPool, error) {
	list, err := s.pools.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	out := make([]lbapi.IPPool, 0, len(list))
	for _, o := range list {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			continue
		}
		var p lbapi.IPPool
		if err := fromUnstructured(u, &p); err != nil {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *sim) lbKeys(ns string) []string { return genericKeys(s.lbs, ns) }

func (s *sim) poolKeys() []string {
	var keys []string
	for _, k := range genericKeys(s.pools, "") {
		keys = append(keys, poolKeyPrefix+k)
	}
	return keys
}

func containsValue(m map[string]string, v string) bool {
	for _, x := range m {
		if x == v {
			return true
		}
	}
	return false
}

// setCondition sets condition typ, keeping its timestamps when neither
// status nor message changed.
func setCondition(conds []lbapi.Condition, typ string, status corev1.ConditionStatus, message string, now time.Time) []lbapi.Condition {
	stamp := now.UTC().Format(time.RFC3339)
	out := make([]lbapi.Condition, 0, len(conds)+1)
	found := false
	for _, c := range conds {
		if c.Type != typ {
			out = append(out, c)
			continue
		}
		found = true
		if c.Status != string(status) {
			c.LastTransitionTime = stamp
		}
		if c.Status != string(status) || c.Message != message {
			c.LastUpdateTime = stamp
		}
		c.Status, c.Message = string(status), message
		out = append(out, c)
	}
	if !found {
		out = append(out, lbapi.Condition{Type: typ, Status: string(status), Message: message, LastUpdateTime: stamp, LastTransitionTime: stamp})
	}
	return out
}
