// Package controllers plays the Harvester hosts (kubelet, virt-handler,
// the guests' network) and stands in for what cannot run here: it runs
// Pods and VMIs through boot, reports guest addresses by the qemu-guest-agent
// rule, provisions disks as Longhorn's provisioner, imports images and
// allocates load-balancer and managed-DHCP addresses, against a real
// kube-apiserver beside KubeVirt's and Harvester's own controllers.
package controllers

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/sim/guestnet"
	"github.com/harvester-kit/harvester-machine/sim/tunables"
)

// Options tune the simulated controllers.
type Options struct {
	// Timing is what the simulator starts with: the VMI phases' delays
	// (ScheduleDelay: a VMI stays in Scheduling at least that long, its
	// launcher Pod started, as kubelet would, once bound and ScheduleDelay
	// after it was created; BootDelay: Scheduled to Running; IPDelay:
	// Running to addresses, when the guest runs the agent), a live
	// migration's transfer, and the grace period the kubelets renew their
	// Lease for. The tunables ConfigMap changes it while they run.
	Timing tunables.Values
	// SetNodeGrace, when set, makes kube-controller-manager run with a new
	// --node-monitor-grace-period (the tunables ConfigMap asked for it); it
	// returns once that one is serving.
	SetNodeGrace func(ctx context.Context, grace time.Duration) error
	// Log receives the controllers' logs; nil discards them.
	Log *slog.Logger
	// GuestNetwork, when set, gets each running guest with an address and
	// loses it when its VMI stops (nil: no guest network).
	GuestNetwork *guestnet.Network
	// KubeletCert, when set, gives each host a kubelet server
	// (serveKubelet) with a certificate it issues.
	KubeletCert KubeletCert
}

// Resources the controllers serve.
var (
	gvrVM    = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	gvrVMI   = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	gvrImage = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "virtualmachineimages"}
)

// Start launches every controller and returns once their informer caches
// have synced; the controllers run until ctx is done.
func Start(ctx context.Context, cfg *rest.Config, opts Options) error {
	s, err := newSim(ctx, cfg, opts)
	if err != nil {
		return err
	}
	s.kubeInformers.Start(ctx.Done())
	s.faultInformers.Start(ctx.Done())
	s.dynInformers.Start(ctx.Done())
	for typ, ok := range s.kubeInformers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("start sim controllers: cache of %v did not sync", typ)
		}
	}
	for typ, ok := range s.faultInformers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("start sim controllers: cache of %v did not sync", typ)
		}
	}
	for gvr, ok := range s.dynInformers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("start sim controllers: cache of %s did not sync", gvr.Resource)
		}
	}
	s.handlerREST.done = ctx.Done()
	s.run(ctx)
	return nil
}

// sim holds the clients, caches and queues shared by the controllers.
type sim struct {
	opts  Options
	log   *slog.Logger
	kube  kubernetes.Interface
	dyn   dynamic.Interface
	event *eventSink

	kubeInformers  informers.SharedInformerFactory
	faultInformers informers.SharedInformerFactory
	dynInformers   dynamicinformer.DynamicSharedInformerFactory

	vms, vmis, images, lbs, pools cache.GenericLister
	migrations                    cache.GenericLister
	dhcpPools, netConfigs         cache.GenericLister
	vmiInformer                   cache.SharedIndexInformer
	// nodes are the hosts, as the kubelets and virt-handlers read them.
	nodes corelisters.NodeLister

	vmiQ, pvcQ, imageQ, lbQ, dhcpQ, podQ *queue

	state    *vmiState
	timing   atomic.Pointer[tunables.Values] // what the controllers run with now
	tuneWake chan struct{}                   // the tunables ConfigMap changed
	hosts    *Hosts                          // the hosts' own state (host.go)
	handler  handlerClients

	handlerREST handlerServers
}

// Client-side rate limits: the controllers write often in bursts (every
// VMI moves through four phases), so client-go's default of 5 QPS would
// turn the simulated delays into seconds.
const (
	clientQPS   = 200
	clientBurst = 400
)

func newSim(ctx context.Context, cfg *rest.Config, opts Options) (*sim, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("start sim controllers: kubernetes client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("start sim controllers: dynamic client: %w", err)
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &sim{
		opts:          opts,
		log:           log,
		kube:          kube,
		dyn:           dyn,
		event:         newEventSink(kube, log),
		kubeInformers: informers.NewSharedInformerFactory(kube, 0),
		faultInformers: informers.NewSharedInformerFactoryWithOptions(kube, 0,
			informers.WithNamespace(fault.Namespace)),
		dynInformers: dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
		state:        newVMIState(),
		hosts:        NewHosts(),
		handler:      handlerClients{cfg: cfg},
	}
	timing := opts.Timing
	s.timing.Store(&timing)
	s.tuneWake = make(chan struct{}, 1)
	s.vmiQ = newQueue("virt-handler", s.reconcileVMI, log)
	s.pvcQ = newQueue("pvc", s.reconcilePVC, log)
	s.imageQ = newQueue("image", s.reconcileImage, log)
	s.lbQ = newQueue("loadbalancer", s.reconcileLoadBalancer, log)
	s.dhcpQ = newQueue("managed-dhcp", s.reconcileDHCPPool, log)
	s.podQ = newQueue("kubelet", s.reconcilePod, log)
	if err := s.register(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *sim) run(ctx context.Context) {
	go s.event.run(ctx)
	go s.runHeartbeats(ctx)
	go s.runTunables(ctx, s.tuneWake)
	for _, q := range []*queue{s.vmiQ, s.pvcQ, s.imageQ, s.lbQ, s.dhcpQ, s.podQ} {
		go q.run(ctx)
	}
}
