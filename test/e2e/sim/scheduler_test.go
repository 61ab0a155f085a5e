package sim_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestSchedulerCredentialIsOnlyTheSchedulers: kube-scheduler's kubeconfig
// is user system:kube-scheduler with the bootstrap RBAC's rights and no
// more: reading Secrets, deleting a host and creating a pod are refused.
func TestSchedulerCredentialIsOnlyTheSchedulers(t *testing.T) {
	ctx := testContext(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(simulator.Dir, "pki", "kube-scheduler.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	sched, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// What it must be able to do, so the refusals below are about rights.
	if _, err := sched.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("the scheduler cannot list nodes: %v", err)
	}
	if _, err := sched.CoreV1().Secrets("harvester-system").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list Secrets as the scheduler: %v, want Forbidden", err)
	}
	if err := sched.CoreV1().Nodes().Delete(ctx, "harvester-node-0", metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("delete a host as the scheduler: %v, want Forbidden", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "intruder"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Mi")}}}}}}
	if _, err := sched.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsForbidden(err) {
		t.Errorf("create a pod as the scheduler: %v, want Forbidden", err)
	}
}

// TestHostLeasesRenewed: every host's kubelet Lease in kube-node-lease is
// held by the host, owned by its Node, 40 s long, and renewed within
// 10 s (plus slack), as kubelet does.
func TestHostLeasesRenewed(t *testing.T) {
	ctx := testContext(t)
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		l, err := kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("lease of %s: %v", n.Name, err)
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != n.Name || l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 40 {
			t.Errorf("lease of %s: holder %v duration %v, want the host and 40", n.Name, l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds)
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" || l.OwnerReferences[0].UID != n.UID {
			t.Errorf("lease of %s: owners %+v, want its Node", n.Name, l.OwnerReferences)
		}
	}
	name := nodes.Items[0].Name
	first, err := kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	w, err := kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Watch(wctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		if l, ok := ev.Object.(*coordinationv1.Lease); ok && ev.Type == watch.Modified && l.Spec.RenewTime.After(first.Spec.RenewTime.Time) {
			return
		}
	}
	t.Fatalf("lease of %s not renewed within 15 s", name)
}
