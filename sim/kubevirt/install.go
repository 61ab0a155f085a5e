package kubevirt

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// The files bin/kubevirt-install writes (see
// test/tools/kubevirt/cmd/kubevirt-install).
const (
	crdsFile        = "crds.json"
	rbacFile        = "rbac.json"
	certsFile       = "certs.json"
	webhooksFile    = "webhooks.json"
	apiServicesFile = "apiservices.json"
)

var gvrCRD = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Generate writes virt-operator's objects with bin/kubevirt-install. It
// needs no API server: the simulator runs it while kube-apiserver starts.
func (c *ControlPlane) Generate(ctx context.Context) error {
	return c.generate(ctx)
}

// InstallCRDs applies KubeVirt's CRDs and waits until each is
// Established: the rest of the simulator may create KubeVirt objects from
// then on.
func (c *ControlPlane) InstallCRDs(ctx context.Context) error {
	crds, err := newApplier(c.kube.Discovery(), c.dyn).applyFiles(ctx, c.path("objects", crdsFile))
	if err != nil {
		return err
	}
	ri := c.dyn.Resource(gvrCRD)
	k := kubeapi.KindOf[*unstructured.UnstructuredList]("CRD", &unstructured.Unstructured{}, ri)
	for _, crd := range crds {
		_, err := kubeapi.Wait(ctx, k, "", crd.GetName(), 0, func(u *unstructured.Unstructured) (bool, error) {
			return u != nil && kubeapi.ConditionTrue(u, "Established"), nil
		})
		if err != nil {
			return fmt.Errorf("kubevirt: wait for CRD %s to be established: %w", crd.GetName(), err)
		}
	}
	return nil
}

// Configure does the part of virt-operator's work that needs no CRD (the
// simulator runs it while the CRDs are being established): the namespace,
// RBAC and certificates, and each component's ServiceAccount token.
func (c *ControlPlane) Configure(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.o.Namespace}}
	if _, err := c.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubevirt: create namespace %s: %w", c.o.Namespace, err)
	}
	if _, err := newApplier(c.kube.Discovery(), c.dyn).applyFiles(ctx, c.path("objects", rbacFile), c.path("objects", certsFile)); err != nil {
		return err
	}
	for _, sa := range []string{apiServiceAccount, controllerServiceAccount} {
		if err := c.writeServiceAccount(ctx, sa); err != nil {
			return err
		}
	}
	return nil
}
