package sim

import (
	"context"
	"fmt"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/subresources"
)

// VirtAPIService is the Service in harvester-system the APIService of
// subresources.kubevirt.io points at (Harvester runs KubeVirt's virt-api
// there); the simulator's is an ExternalName Service for 127.0.0.1.
const VirtAPIService = "virt-api"

var gvrAPIService = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// startVirtAPI serves subresources.kubevirt.io on a loopback port,
// registers it with the aggregation layer and returns once kube-apiserver
// reports the APIService Available.
func startVirtAPI(ctx, startCtx context.Context, cfg *rest.Config, admin adminClients, p *pki, log *slog.Logger) error {
	srv, err := subresources.Start(ctx, subresources.Options{
		Config: cfg, CertPEM: p.VirtAPICertPEM, KeyPEM: p.VirtAPIKeyPEM,
		RequestHeaderCAPEM: p.FrontProxyCAPEM, AllowedNames: []string{ProxyClientName}, Log: log,
	})
	if err != nil {
		return err
	}
	kube, dyn := admin.kube, admin.dyn
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: VirtAPIService, Namespace: SystemNamespace, Labels: map[string]string{simLabel: "true"}},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1"},
	}
	if _, err := kube.CoreV1().Services(SystemNamespace).Create(startCtx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("virt-api: create service: %w", err)
	}
	name := subresources.Version + "." + subresources.Group
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name, "labels": map[string]any{simLabel: "true"}},
		"spec": map[string]any{
			"group": subresources.Group, "version": subresources.Version,
			"groupPriorityMinimum": int64(1000), "versionPriority": int64(15),
			"caBundle": p.CACertPEM,
			"service":  map[string]any{"namespace": SystemNamespace, "name": VirtAPIService, "port": int64(srv.Port())},
		},
	}}
	if _, err := dyn.Resource(gvrAPIService).Create(startCtx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("virt-api: create apiservice: %w", err)
	}
	kind := kubeapi.KindOf("APIService", &unstructured.Unstructured{}, dyn.Resource(gvrAPIService))
	_, err = kubeapi.Wait(startCtx, kind, "", name, 0, func(u *unstructured.Unstructured) (bool, error) {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Available" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("virt-api: apiservice %s not available: %w", name, err)
	}
	return nil
}
