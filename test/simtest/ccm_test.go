package simtest

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestNeedsUpdate: annotation, spec and UID changes start a sync; the
// status alone (kube-vip writing the ingress) and the finalizer do not.
func TestNeedsUpdate(t *testing.T) {
	base := LoadBalancerService("default", "web", "uid-1")
	cases := []struct {
		name   string
		change func(s *corev1.Service)
		want   bool
	}{
		{"nothing", func(*corev1.Service) {}, false},
		{"kube-vip's vipHost annotation", func(s *corev1.Service) { s.Annotations = map[string]string{AnnotationKubeVIPHost: "n1"} }, true},
		{"the ingress (status only)", func(s *corev1.Service) {
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "10.0.0.1"}}
		}, false},
		{"the finalizer", func(s *corev1.Service) { s.Finalizers = []string{FinalizerLoadBalancerCleanup} }, false},
		{"a port", func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }, true},
		{"type ClusterIP", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }, true},
		{"a new UID", func(s *corev1.Service) { s.UID = "uid-2" }, true},
		{"traffic policy", func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal }, true},
	}
	for _, c := range cases {
		cur := base.DeepCopy()
		c.change(cur)
		if got := NeedsUpdate(base, cur); got != c.want {
			t.Errorf("%s: NeedsUpdate = %v, want %v", c.name, got, c.want)
		}
	}
	plain := base.DeepCopy()
	plain.Spec.Type = corev1.ServiceTypeClusterIP
	other := plain.DeepCopy()
	other.Annotations = map[string]string{"a": "b"}
	if NeedsUpdate(plain, other) {
		t.Error("a change of a Service that never wanted a load balancer starts a sync")
	}
}

// TestNeedsCleanup: only a Service holding the finalizer that is deleted or
// no longer of type LoadBalancer.
func TestNeedsCleanup(t *testing.T) {
	s := LoadBalancerService("default", "web", "uid-1")
	if NeedsCleanup(s) {
		t.Error("a live LoadBalancer Service needs clean-up")
	}
	s.Finalizers = []string{FinalizerLoadBalancerCleanup}
	if NeedsCleanup(s) {
		t.Error("a live LoadBalancer Service with the finalizer needs clean-up")
	}
	s.Spec.Type = corev1.ServiceTypeNodePort
	if !NeedsCleanup(s) {
		t.Error("a Service no longer of type LoadBalancer does not need clean-up")
	}
}
