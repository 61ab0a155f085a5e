// Package guests plays the guest clusters the driver's VMs form: for each
// guest cluster a VM is labelled with it starts a control plane (through
// ControlPlanes), registers running VMs as Nodes the way kubelet with the
// external cloud provider does, and applies the manifests the nodes'
// cloud-init writes into K3s/RKE2's auto-deploy folder as their deploy
// controller does.
package guests

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// ControlPlanes starts and stops guest clusters' API servers.
type ControlPlanes interface {
	// Start returns the guest cluster's API server, starting it when needed.
	Start(ctx context.Context, cluster string) (*rest.Config, error)
	// Stop ends it and removes its files.
	Stop(cluster string)
}

var (
	gvrVM  = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	gvrVMI = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
)

// controller reconciles one guest cluster per key.
type controller struct {
	log     *slog.Logger
	planes  ControlPlanes
	kube    kubernetes.Interface
	vms     cache.GenericLister
	vmis    cache.GenericLister
	secrets informers.SharedInformerFactory
	faults  informers.SharedInformerFactory // the fault ConfigMap (hosts that are down)
	queue   workqueue.TypedRateLimitingInterface[string]
	guests  map[string]*guest // touched only by the single worker
}

// Start watches Harvester's VMs and runs the guest clusters until ctx ends.
func Start(ctx context.Context, cfg *rest.Config, planes ControlPlanes, log *slog.Logger) error {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 100, 200
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("start guest clusters: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("start guest clusters: %w", err)
	}
	selector := func(o *metav1.ListOptions) { o.LabelSelector = hv.LabelGuestCluster }
	dynInf := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, metav1.NamespaceAll, selector)
	c := &controller{
		log: log, planes: planes, kube: kube,
		vms: dynInf.ForResource(gvrVM).Lister(), vmis: dynInf.ForResource(gvrVMI).Lister(),
		secrets: informers.NewSharedInformerFactory(kube, 0),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.NewTypedMaxOfRateLimiter(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](50*time.Millisecond, 5*time.Second),
			&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(50, 100)},
		), workqueue.TypedRateLimitingQueueConfig[string]{Name: "sim-guests"}),
		guests: map[string]*guest{},
	}
	byLabel := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			if name := u.GetLabels()[hv.LabelGuestCluster]; name != "" {
				c.queue.Add(name)
			}
		}
	}
	bySecret := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if s, ok := obj.(*corev1.Secret); ok {
			for _, name := range c.clustersIn(s.Namespace) {
				c.queue.Add(name)
			}
		}
	}
	for what, inf := range map[string]cache.SharedIndexInformer{"virtualmachines": dynInf.ForResource(gvrVM).Informer(), "virtualmachineinstances": dynInf.ForResource(gvrVMI).Informer()} {
		if _, err := inf.AddEventHandler(handlerFuncs(byLabel)); err != nil {
			return fmt.Errorf("start guest clusters: watch %s: %w", what, err)
		}
	}
	if _, err := c.secrets.Core().V1().Secrets().Informer().AddEventHandler(handlerFuncs(bySecret)); err != nil {
		return fmt.Errorf("start guest clusters: watch secrets: %w", err)
	}
	if err := c.watchHostFaults(kube); err != nil {
		return err
	}
	dynInf.Start(ctx.Done())
	c.secrets.Start(ctx.Done())
	c.faults.Start(ctx.Done())
	dynInf.WaitForCacheSync(ctx.Done())
	c.secrets.WaitForCacheSync(ctx.Done())
	c.faults.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	go c.run(ctx)
	return nil
}

func handlerFuncs(fn func(any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{AddFunc: fn, UpdateFunc: func(_, o any) { fn(o) }, DeleteFunc: fn}
}

func (c *controller) run(ctx context.Context) {
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		err := c.reconcile(ctx, key)
		switch {
		case err == nil:
			c.queue.Forget(key)
		case ctx.Err() == nil:
			c.log.Info("guest cluster reconcile failed, retrying", "cluster", key, "err", err)
			c.queue.AddRateLimited(key)
		}
		c.queue.Done(key)
	}
}

// clustersIn lists the guest clusters with VMs in namespace.
func (c *controller) clustersIn(namespace string) []string {
	list, _ := c.vms.ByNamespace(namespace).List(labels.Everything())
	seen := map[string]bool{}
	var out []string
	for _, o := range list {
		if u, ok := o.(*unstructured.Unstructured); ok {
			if name := u.GetLabels()[hv.LabelGuestCluster]; name != "" && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out
}

// clusterVMs lists the cluster's VMs, sorted by namespace and name.
func (c *controller) clusterVMs(cluster string) []*unstructured.Unstructured {
	sel := labels.SelectorFromSet(labels.Set{hv.LabelGuestCluster: cluster})
	list, _ := c.vms.List(sel)
	var out []*unstructured.Unstructured
	for _, o := range list {
		if u, ok := o.(*unstructured.Unstructured); ok {
			out = append(out, u)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].GetNamespace()+"/"+out[i].GetName() < out[j].GetNamespace()+"/"+out[j].GetName()
	})
	return out
}

func (c *controller) vmi(ns, name string) *unstructured.Unstructured {
	o, err := c.vmis.ByNamespace(ns).Get(name)
	if err != nil {
		return nil
	}
	u, _ := o.(*unstructured.Unstructured)
	return u
}

// reconcile brings one guest cluster in line with its VMs.
func (c *controller) reconcile(ctx context.Context, cluster string) error {
	vms := c.clusterVMs(cluster)
	if len(vms) == 0 {
		if _, known := c.guests[cluster]; known {
			c.planes.Stop(cluster)
			delete(c.guests, cluster)
		}
		return nil
	}
	g := c.guests[cluster]
	if g == nil {
		cfg, err := c.planes.Start(ctx, cluster)
		if err != nil {
			return err
		}
		if g, err = newGuest(cfg); err != nil {
			return err
		}
		c.guests[cluster] = g
	}
	if err := g.ensureCRDs(ctx); err != nil {
		return err
	}
	running := map[string]string{} // node name -> address
	var servers []*unstructured.Unstructured
	for _, vm := range vms {
		vmi := c.vmi(vm.GetNamespace(), vm.GetName())
		if ip := RunningIP(vmi); ip != "" && !c.onDownHost(vmi) {
			running[NodeName(vm, vmi)] = ip
			servers = append(servers, vm)
		}
	}
	if err := c.syncNodes(ctx, g, running); err != nil {
		return err
	}
	return c.deployManifests(ctx, g, cluster, servers)
}

// syncNodes registers the running VMs as Nodes and marks the others NotReady.
func (c *controller) syncNodes(ctx context.Context, g *guest, running map[string]string) error {
	nodes := g.kube.CoreV1().Nodes()
	now := time.Now()
	for name, ip := range running {
		if _, err := nodes.Get(ctx, name, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			if _, err := nodes.Create(ctx, BuildNode(name, ip), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("register node %s: %w", name, err)
			}
		} else if err != nil {
			return fmt.Errorf("get node %s: %w", name, err)
		}
	}
	list, err := nodes.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	for i := range list.Items {
		n := &list.Items[i]
		ip, isRunning := running[n.Name]
		statusChanged, specChanged := NodeStatus(n, isRunning, ip, now)
		if specChanged {
			updated, err := nodes.Update(ctx, n, metav1.UpdateOptions{})
			if err != nil {
				return fmt.Errorf("update node %s: %w", n.Name, err)
			}
			updated.Status = n.Status
			n = updated
		}
		if statusChanged {
			if _, err := nodes.UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("update status of node %s: %w", n.Name, err)
			}
		}
	}
	return nil
}

// deployManifests applies the auto-deploy files the first running server
// VM's cloud-init writes.
func (c *controller) deployManifests(ctx context.Context, g *guest, cluster string, servers []*unstructured.Unstructured) error {
	if len(servers) == 0 {
		return nil
	}
	vm := servers[0]
	files, err := c.cloudInitFiles(vm)
	if err != nil {
		c.log.Warn("cannot read the cloud-init of a guest node", "cluster", cluster, "vm", vm.GetNamespace()+"/"+vm.GetName(), "err", err)
		return nil
	}
	for _, m := range Manifests(files) {
		applied, err := g.deploy(ctx, m)
		if err != nil {
			return fmt.Errorf("deploy %s: %w", m.Path, err)
		}
		if applied {
			c.log.Info("guest cluster applied add-on", "cluster", cluster, "addon", m.Addon, "source", m.Path)
		}
	}
	return nil
}
