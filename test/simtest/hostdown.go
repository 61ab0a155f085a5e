package simtest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/tunables"
)

var gvrSetting = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}

// SetForceResetPolicy sets the value of Harvester's setting
// vm-force-reset-policy, as an admin does (a merge patch of the Setting).
func SetForceResetPolicy(ctx context.Context, dyn dynamic.Interface, value string) error {
	patch, err := json.Marshal(map[string]any{"value": value})
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(gvrSetting).Patch(ctx, harvester.SettingVMForceResetPolicy, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("set %s: %w", harvester.SettingVMForceResetPolicy, err)
	}
	return nil
}

// WaitNode watches host name until cond holds and returns it.
func WaitNode(ctx context.Context, kube kubernetes.Interface, name string, cond func(*corev1.Node) bool) (*corev1.Node, error) {
	k := kubeapi.KindOf[*corev1.NodeList]("Node", &corev1.Node{}, kube.CoreV1().Nodes())
	n, err := kubeapi.Wait(ctx, k, "", name, 0, func(n *corev1.Node) (bool, error) { return n != nil && cond(n), nil })
	if err != nil {
		return nil, fmt.Errorf("wait for host %s: %w", name, err)
	}
	return n, nil
}

// NodeReady is the status of the Node's Ready condition ("" without one).
func NodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// HasTaint reports whether the Node has a taint of key and effect.
func HasTaint(n *corev1.Node, key string, effect corev1.TaintEffect) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key && t.Effect == effect })
}

// NodeTimeline records, from a watch of one host, when each of its
// states was first seen (Ready Unknown, a taint "key:effect"), in order.
type NodeTimeline struct {
	mu     sync.Mutex
	seen   map[string]time.Time
	order  []string
	cancel context.CancelFunc
}

// WatchNode starts recording host name's states until Stop.
func WatchNode(ctx context.Context, kube kubernetes.Interface, name string) (*NodeTimeline, error) {
	ctx, cancel := context.WithCancel(ctx)
	tl := &NodeTimeline{seen: map[string]time.Time{}, cancel: cancel}
	lw := cache.NewListWatchFromClient(kube.CoreV1().RESTClient(), "nodes", "", fieldsName(name))
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: lw, ObjectType: &corev1.Node{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { tl.note(obj) },
			UpdateFunc: func(_, obj any) { tl.note(obj) },
		},
	})
	go ctrl.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), ctrl.HasSynced) {
		cancel()
		return nil, fmt.Errorf("watch host %s: %w", name, ctx.Err())
	}
	return tl, nil
}

func (tl *NodeTimeline) note(obj any) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	now := time.Now()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	mark := func(state string) {
		if _, ok := tl.seen[state]; !ok {
			tl.seen[state] = now
			tl.order = append(tl.order, state)
		}
	}
	mark("Ready " + string(NodeReady(n)))
	for _, t := range n.Spec.Taints {
		mark(t.Key + ":" + string(t.Effect))
	}
}

// At is when state was first seen (zero: never).
func (tl *NodeTimeline) At(state string) time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.seen[state]
}

// Order lists the states in the order they were first seen.
func (tl *NodeTimeline) Order() []string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.order)
}

// Stop ends the watch.
func (tl *NodeTimeline) Stop() { tl.cancel() }

func fieldsName(name string) fields.Selector {
	return fields.OneTermEqualSelector("metadata.name", name)
}

// Tune changes tunables (sim/tunables) of the running simulator for the
// test and gives them their start values back when it ends.
func Tune(ctx context.Context, t testing.TB, kube kubernetes.Interface, changes map[string]string) {
	t.Helper()
	if err := tunables.Set(ctx, kube, changes); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := tunables.Reset(ctx, kube, changes); err != nil {
			t.Errorf("give the tunables their start values: %v", err)
		}
	})
}

// HostFailures readies the package's simulator for a host failure, for
// the test: kube-controller-manager's --node-monitor-grace-period is
// grace and Harvester's vm-force-reset-policy is policy until it ends;
// then both are what they were.
func HostFailures(ctx context.Context, t testing.TB, kube kubernetes.Interface, dyn dynamic.Interface, grace time.Duration, policy string) {
	t.Helper()
	was, err := dyn.Resource(gvrSetting).Get(ctx, harvester.SettingVMForceResetPolicy, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read %s: %v", harvester.SettingVMForceResetPolicy, err)
	}
	value, _, _ := unstructured.NestedString(was.Object, "value")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := SetForceResetPolicy(ctx, dyn, value); err != nil {
			t.Errorf("restore %s: %v", harvester.SettingVMForceResetPolicy, err)
		}
	})
	Tune(ctx, t, kube, map[string]string{tunables.NodeMonitorGracePeriod: grace.String()})
	if err := SetForceResetPolicy(ctx, dyn, policy); err != nil {
		t.Fatal(err)
	}
}
