package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/sim/tunables"
)

// handler calls fn with the object of every add, update and delete.
func handler(fn func(obj any)) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    fn,
		UpdateFunc: func(_, obj any) { fn(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			fn(obj)
		},
	}
}

func keyOf(obj any) (key, namespace string) {
	k, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		return "", ""
	}
	ns, _, _ := cache.SplitMetaNamespaceKey(k)
	return k, ns
}

// register wires informer events to the queues: every object feeds its
// own controller and the controllers whose decisions depend on it.
func (s *sim) register(ctx context.Context) error {
	vmInf := s.dynInformers.ForResource(gvrVM)
	vmiInf := s.dynInformers.ForResource(gvrVMI)
	imgInf := s.dynInformers.ForResource(gvrImage)
	s.vms, s.vmis, s.images = vmInf.Lister(), vmiInf.Lister(), imgInf.Lister()
	s.vmiInformer = vmiInf.Informer()
	migInf := s.dynInformers.ForResource(gvrVMIM)
	s.migrations = migInf.Lister()
	lbInf := s.dynInformers.ForResource(gvrLB)
	poolInf := s.dynInformers.ForResource(gvrPool)
	s.lbs, s.pools = lbInf.Lister(), poolInf.Lister()
	dhcpPoolInf := s.dynInformers.ForResource(dhcpapi.GVRIPPool)
	netCfgInf := s.dynInformers.ForResource(dhcpapi.GVRNetworkConfig)
	s.dhcpPools, s.netConfigs = dhcpPoolInf.Lister(), netCfgInf.Lister()
	// The hosts' Nodes feed no queue, but the kubelets' heartbeats, the
	// host faults and the pods' host addresses read them: their informer
	// must be asked for here, before Start starts the factory (an
	// informer first asked for afterwards is never started, its lister
	// always empty).
	nodeInf := s.kubeInformers.Core().V1().Nodes()
	nodeInf.Informer()
	s.nodes = nodeInf.Lister()

	regs := []struct {
		what string
		inf  cache.SharedIndexInformer
		fn   func(obj any)
	}{
		{"virtualmachines", vmInf.Informer(), func(obj any) {
			key, _ := keyOf(obj)
			s.vmiQ.add(key)
			s.enqueueNamespace(s.dhcpQ, "", s.dhcpPoolKeys)
		}},
		{"managed-DHCP ippools", dhcpPoolInf.Informer(), func(obj any) {
			key, _ := keyOf(obj)
			s.dhcpQ.add(key)
			s.enqueueNamespace(s.vmiQ, "", s.vmiKeys) // guests' leases follow the pool's allocation
		}},
		{"virtualmachinenetworkconfigs", netCfgInf.Informer(), func(any) {
			s.enqueueNamespace(s.dhcpQ, "", s.dhcpPoolKeys)
		}},
		{"virtualmachineinstances", vmiInf.Informer(), func(obj any) {
			key, ns := keyOf(obj)
			s.vmiQ.add(key)
			s.enqueueNamespace(s.pvcQ, ns, s.pvcKeys)
			s.enqueueNamespace(s.lbQ, ns, s.lbKeys)
		}},
		{"loadbalancers", lbInf.Informer(), func(obj any) {
			key, _ := keyOf(obj)
			s.lbQ.add(key)
		}},
		{"ippools", poolInf.Informer(), func(obj any) {
			key, _ := keyOf(obj)
			s.lbQ.add(poolKeyPrefix + key)
		}},
		{"virtualmachineimages", imgInf.Informer(), func(obj any) {
			key, ns := keyOf(obj)
			s.imageQ.add(key)
			s.enqueueNamespace(s.vmiQ, ns, s.vmiKeys)
			s.enqueueNamespace(s.pvcQ, ns, s.pvcKeys)
		}},
		{"pods", s.kubeInformers.Core().V1().Pods().Informer(), func(obj any) {
			key, ns := keyOf(obj)
			s.podQ.add(key)
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "VirtualMachineInstance" {
				s.vmiQ.add(ns + "/" + ref.Name)
			} else if pod.Labels[kubevirtv1.AppLabel] == "hotplug-disk" {
				s.enqueueNamespace(s.vmiQ, ns, s.vmiKeys) // an attachment Pod: its VMI's volume status
			}
		}},
		{"persistentvolumeclaims", s.kubeInformers.Core().V1().PersistentVolumeClaims().Informer(), func(obj any) {
			key, ns := keyOf(obj)
			s.pvcQ.add(key)
			s.enqueueNamespace(s.vmiQ, ns, s.vmiKeys) // hot-plugged volumes' status
			if pvc, ok := obj.(*corev1.PersistentVolumeClaim); ok && pvc.Spec.VolumeName != "" {
				s.pvcQ.add(pvPrefix + pvc.Spec.VolumeName)
			}
		}},
		{"secrets", s.kubeInformers.Core().V1().Secrets().Informer(), func(obj any) {
			_, ns := keyOf(obj)
			s.enqueueNamespace(s.vmiQ, ns, s.vmiKeys)
			s.enqueueNamespace(s.podQ, ns, s.podKeys) // a Pod waiting to mount it
		}},
		{"storageclasses", s.kubeInformers.Storage().V1().StorageClasses().Informer(), func(any) {
			s.enqueueNamespace(s.pvcQ, "", s.pvcKeys)
		}},
		{"fault and tunables configmaps", s.faultInformers.Core().V1().ConfigMaps().Informer(), func(obj any) {
			key, _ := keyOf(obj)
			if key == tunables.Namespace+"/"+tunables.ConfigMap {
				select {
				case s.tuneWake <- struct{}{}:
				default: // runTunables reads the latest content anyway
				}
			}
			if key == fault.ConfigMapKey {
				s.enqueueNamespace(s.vmiQ, "", s.vmiKeys)
				s.enqueueNamespace(s.lbQ, "", func(string) []string { return s.poolKeys() })
				s.enqueueNamespace(s.dhcpQ, "", s.dhcpPoolKeys)
				s.syncHostFaults()
				s.syncStuckScheduling(ctx)
				s.acknowledgeFaults(ctx, obj)
			}
		}},
	}
	for _, r := range regs {
		if _, err := r.inf.AddEventHandler(handler(r.fn)); err != nil {
			return fmt.Errorf("start sim controllers: watch %s: %w", r.what, err)
		}
	}
	return nil
}

// enqueueNamespace adds every key listed for the namespace ("" = all).
func (s *sim) enqueueNamespace(q *queue, ns string, list func(ns string) []string) {
	for _, k := range list(ns) {
		q.add(k)
	}
}

func (s *sim) vmiKeys(ns string) []string { return genericKeys(s.vmis, ns) }

func (s *sim) pvcKeys(ns string) []string {
	return objectKeys(s.kubeInformers.Core().V1().PersistentVolumeClaims().Lister().PersistentVolumeClaims(ns).List(labels.Everything()))
}

// objectKeys are the namespace/name keys of a typed lister's answer (none
// on an error).
func objectKeys[T metav1.Object](objs []T, err error) []string {
	if err != nil {
		return nil
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, o.GetNamespace()+"/"+o.GetName())
	}
	return keys
}

func genericKeys(l cache.GenericLister, ns string) []string {
	var objs []any
	if ns == "" {
		list, _ := l.List(labels.Everything())
		for _, o := range list {
			objs = append(objs, o)
		}
	} else {
		list, _ := l.ByNamespace(ns).List(labels.Everything())
		for _, o := range list {
			objs = append(objs, o)
		}
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		if k, _ := keyOf(o); k != "" {
			keys = append(keys, k)
		}
	}
	return keys
}

// controllerVMName returns the name of the VirtualMachine controlling a VMI.
func controllerVMName(u *unstructured.Unstructured) string {
	for _, ref := range u.GetOwnerReferences() {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "VirtualMachine" {
			return ref.Name
		}
	}
	return ""
}
