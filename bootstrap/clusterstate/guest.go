package clusterstate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/guest/addons"
)

// FetchGuest lists the guest cluster's nodes, LoadBalancer Services and the
// kube-system Deployments and DaemonSets (where the cloud provider runs),
// the PVCs, StorageClasses and VolumeAttachments (the CSI driver's work).
func FetchGuest(ctx context.Context, guest kubernetes.Interface) Guest {
	g := Guest{Errors: map[string]string{}}
	fail := func(kind, ns string, err error) {
		g.Errors[kind] = fmt.Sprintf("list %ss in the guest cluster %s: %v", kind, ns, err)
	}
	if l, err := guest.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
		g.Nodes = l.Items
	} else {
		fail(KindNode, "", err)
	}
	if l, err := guest.CoreV1().Services("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, s := range l.Items {
			if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
				g.Services = append(g.Services, s)
			}
		}
	} else {
		fail(KindService, "", err)
	}
	apps := guest.AppsV1()
	if l, err := apps.Deployments(addons.DefaultNamespace).List(ctx, metav1.ListOptions{}); err == nil {
		g.Deployments = l.Items
	} else {
		fail(KindWorkload, addons.DefaultNamespace, err)
	}
	if l, err := apps.DaemonSets(addons.DefaultNamespace).List(ctx, metav1.ListOptions{}); err == nil {
		g.DaemonSets = l.Items
	} else {
		fail(KindWorkload, addons.DefaultNamespace, err)
	}
	if l, err := guest.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{}); err == nil {
		g.PVCs = l.Items
	} else {
		fail(KindPVC, "", err)
	}
	storage := guest.StorageV1()
	if l, err := storage.StorageClasses().List(ctx, metav1.ListOptions{}); err == nil {
		g.StorageClasses = l.Items
	} else {
		fail(KindStorageClass, "", err)
	}
	if l, err := storage.VolumeAttachments().List(ctx, metav1.ListOptions{}); err == nil {
		g.VolumeAttachments = l.Items
	} else {
		fail(KindVolumeAttachment, "", err)
	}
	return g
}
