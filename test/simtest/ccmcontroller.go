package simtest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/harvester-kit/harvester-machine/guest/addons"
)

// FinalizerLoadBalancerCleanup is the service controller's finalizer on a
// Service it made a load balancer for.
const FinalizerLoadBalancerCleanup = "service.kubernetes.io/load-balancer-cleanup"

// ServiceController runs a CCM against a guest cluster's Services as
// k8s.io/cloud-provider's service controller (v0.33) does:
//   - a new Service of type LoadBalancer, or a change NeedsUpdate sees
//     (spec, annotations, UID), is synced: finalizer added,
//     EnsureLoadBalancer, the address written into the Service's
//     kube-vip.io/loadbalancerIPs annotation;
//   - a change of the status alone (kube-vip writing the ingress) is not;
//   - a Service deleted or no longer of type LoadBalancer is cleaned up
//     (CCM.CleanUp: deleted only when status.address is set) and its
//     finalizer removed either way.
//
// Where it simplifies: it syncs with the Service as the event carried it.
// The real controller reads its cache when a worker gets to the Service, so
// it sometimes sees an ingress written right after the last annotation
// change (1 run in 5 measured); this stand-in never does, so it leaves the
// LoadBalancer behind every time the real one does most of the time.
type ServiceController struct {
	CCM   *CCM
	Guest kubernetes.Interface
	// Log, when set, gets one line per sync and clean-up.
	Log func(format string, args ...any)
	// OnError, when set, gets every error (the controller goes on).
	OnError func(error)
}

// Run starts the controller; it returns once the Services are listed and
// stops when ctx ends.
func (s *ServiceController) Run(ctx context.Context) error {
	f := informers.NewSharedInformerFactory(s.Guest, 0)
	inf := f.Core().V1().Services().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { s.handle(ctx, nil, obj.(*corev1.Service)) },
		UpdateFunc: func(oldObj, newObj any) {
			s.handle(ctx, oldObj.(*corev1.Service), newObj.(*corev1.Service))
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if svc, ok := obj.(*corev1.Service); ok && WantsLoadBalancer(svc) && !hasFinalizer(svc) {
				s.cleanUp(ctx, svc)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("service controller: %w", err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("service controller: Services not listed: %w", ctx.Err())
	}
	return nil
}

func (s *ServiceController) handle(ctx context.Context, old, svc *corev1.Service) {
	switch {
	case NeedsCleanup(svc):
		s.cleanUp(ctx, svc)
	case WantsLoadBalancer(svc) && (old == nil || NeedsUpdate(old, svc)):
		s.sync(ctx, svc)
	}
}

func (s *ServiceController) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(format, args...)
	}
}

func (s *ServiceController) fail(err error) {
	if err != nil && s.OnError != nil {
		s.OnError(err)
	}
}

// sync is one EnsureLoadBalancer of svc as the event carried it.
func (s *ServiceController) sync(ctx context.Context, svc *corev1.Service) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.updateService(ctx, svc, func(cur *corev1.Service) bool {
		if hasFinalizer(cur) {
			return false
		}
		cur.Finalizers = append(cur.Finalizers, FinalizerLoadBalancerCleanup)
		return true
	}); err != nil {
		s.fail(err)
		return
	}
	l, err := s.CCM.EnsureLoadBalancer(ctx, svc)
	if err != nil {
		s.fail(err)
		return
	}
	ip := l.Status.AllocatedAddress.IP
	s.logf("sync of Service %s/%s: LoadBalancer %s/%s address %s, status.address %s", svc.Namespace, svc.Name, l.Namespace, l.Name, ip, orUnset(l.Status.Address))
	s.fail(s.updateService(ctx, svc, func(cur *corev1.Service) bool {
		if cur.Annotations[addons.KubeVIPAddressAnnotation] == ip {
			return false
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[addons.KubeVIPAddressAnnotation] = ip
		return true
	}))
}

// cleanUp deletes the LoadBalancer when the CCM sees it, and drops the
// finalizer either way.
func (s *ServiceController) cleanUp(ctx context.Context, svc *corev1.Service) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	deleted, err := s.CCM.CleanUp(ctx, svc)
	if err != nil {
		s.fail(err)
		return
	}
	if deleted {
		s.logf("Service %s/%s gone: LoadBalancer %s/%s deleted", svc.Namespace, svc.Name, s.CCM.Namespace, s.CCM.Name(svc))
	} else {
		s.logf("Service %s/%s gone: LoadBalancer %s/%s has no status.address, so the cloud provider finds none and deletes nothing",
			svc.Namespace, svc.Name, s.CCM.Namespace, s.CCM.Name(svc))
	}
	s.fail(s.updateService(ctx, svc, func(cur *corev1.Service) bool {
		i := slices.Index(cur.Finalizers, FinalizerLoadBalancerCleanup)
		if i < 0 {
			return false
		}
		cur.Finalizers = slices.Delete(cur.Finalizers, i, i+1)
		return true
	}))
}

// updateService applies change to the current Service (same UID) and
// writes it when change reports a difference; a Service gone is done.
func (s *ServiceController) updateService(ctx context.Context, svc *corev1.Service, change func(*corev1.Service) bool) error {
	services := s.Guest.CoreV1().Services(svc.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := services.Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != svc.UID || !change(cur) {
			return nil
		}
		_, err = services.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("update Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return nil
}

func hasFinalizer(svc *corev1.Service) bool {
	return slices.Contains(svc.Finalizers, FinalizerLoadBalancerCleanup)
}

func orUnset(s string) string {
	if s == "" {
		return "unset"
	}
	return s
}

// WantsLoadBalancer: the Service is of type LoadBalancer (and no other
// load-balancer class claims it).
func WantsLoadBalancer(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.LoadBalancerClass == nil
}

// NeedsCleanup: the Service is being deleted, or no longer wants a load
// balancer, while it holds the controller's finalizer.
func NeedsCleanup(svc *corev1.Service) bool {
	return hasFinalizer(svc) && (svc.DeletionTimestamp != nil || !WantsLoadBalancer(svc))
}

// NeedsUpdate is the service controller's rule for which changes of a
// Service start a sync: its type, ports, source ranges, session affinity,
// load-balancer IP, external IPs, annotations, UID, traffic policy, health
// check port, IP families or load-balancer class. A change of the status
// alone does not.
func NeedsUpdate(old, cur *corev1.Service) bool {
	switch {
	case !WantsLoadBalancer(old) && !WantsLoadBalancer(cur):
		return false
	case WantsLoadBalancer(old) != WantsLoadBalancer(cur):
		return true
	}
	o, c := old.Spec, cur.Spec
	return !reflect.DeepEqual(o.LoadBalancerSourceRanges, c.LoadBalancerSourceRanges) ||
		!reflect.DeepEqual(o.Ports, c.Ports) ||
		o.SessionAffinity != c.SessionAffinity ||
		o.LoadBalancerIP != c.LoadBalancerIP ||
		!reflect.DeepEqual(o.ExternalIPs, c.ExternalIPs) ||
		!reflect.DeepEqual(old.Annotations, cur.Annotations) ||
		old.UID != cur.UID ||
		o.ExternalTrafficPolicy != c.ExternalTrafficPolicy ||
		o.HealthCheckNodePort != c.HealthCheckNodePort ||
		!reflect.DeepEqual(o.IPFamilies, c.IPFamilies) ||
		!reflect.DeepEqual(o.LoadBalancerClass, c.LoadBalancerClass)
}
