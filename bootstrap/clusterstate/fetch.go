package clusterstate

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

// Resources of the kinds listed through the dynamic client.
var (
	GVRVM           = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachines")
	GVRVMI          = kubevirtv1.SchemeGroupVersion.WithResource("virtualmachineinstances")
	GVRLoadBalancer = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "loadbalancers"}
	GVRIPPool       = schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "ippools"}
)

// Clients are the thin API layer over Harvester: one list per kind.
type Clients struct {
	Kube   kubernetes.Interface
	Dyn    dynamic.Interface
	Config *rest.Config // for authenticating other credentials at the same server
}

// NewClients connects to the cluster cfg describes.
func NewClients(cfg *rest.Config) (*Clients, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Harvester: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to Harvester: %w", err)
	}
	return &Clients{Kube: kube, Dyn: dyn, Config: cfg}, nil
}

// listDyn lists a custom kind and converts the items to T.
func listDyn[T any](ctx context.Context, ri dynamic.ResourceInterface, selector string) ([]T, error) {
	list, err := ri.List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	out := make([]T, len(list.Items))
	for i := range list.Items {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &out[i]); err != nil {
			return nil, fmt.Errorf("decode %s %s: %w", list.Items[i].GetKind(), list.Items[i].GetName(), err)
		}
	}
	return out, nil
}

// record keeps a listing error of kind in errs (named after the operation).
func record(errs map[string]string, kind, ns string, err error) {
	if err != nil {
		errs[kind] = fmt.Sprintf("list %ss in %q: %v", kind, ns, err)
	}
}

// items returns the listed items, or records err and returns nil.
func items[T any](errs map[string]string, kind, ns string, err error, get func() []T) []T {
	if err != nil {
		record(errs, kind, ns, err)
		return nil
	}
	return get()
}

// FetchHarvester lists, once each, the kinds the checks look at (12 list
// calls, and a get of each of the grant's RoleBindings); with authTokens it also authenticates with each filled token
// Secret's token (one SelfSubjectReview each). A kind that cannot be listed
// is recorded in Errors; the others are still listed.
func (c *Clients) FetchHarvester(ctx context.Context, t Target, authTokens bool) Harvester {
	h := Harvester{Target: t, Errors: map[string]string{}}
	ns, own := t.Namespace, metav1.ListOptions{LabelSelector: t.ClusterSelector()}
	creds := metav1.ListOptions{LabelSelector: credentials.Selector(t.Cluster)}
	var err error
	h.VMs, err = listDyn[kubevirtv1.VirtualMachine](ctx, c.Dyn.Resource(GVRVM).Namespace(ns), "")
	record(h.Errors, KindVM, ns, err)
	h.VMIs, err = listDyn[kubevirtv1.VirtualMachineInstance](ctx, c.Dyn.Resource(GVRVMI).Namespace(ns), "")
	record(h.Errors, KindVMI, ns, err)
	h.LoadBalancers, err = listDyn[lbapi.LoadBalancer](ctx, c.Dyn.Resource(GVRLoadBalancer).Namespace(ns), "")
	record(h.Errors, KindLoadBalancer, ns, err)
	h.IPPools, err = listDyn[lbapi.IPPool](ctx, c.Dyn.Resource(GVRIPPool), "")
	record(h.Errors, KindIPPool, "", err)
	core, rbac := c.Kube.CoreV1(), c.Kube.RbacV1()
	pvcs, err := core.PersistentVolumeClaims(ns).List(ctx, metav1.ListOptions{})
	h.Claims = items(h.Errors, KindPVC, ns, err, func() []corev1.PersistentVolumeClaim { return pvcs.Items })
	for _, p := range h.Claims {
		if t.OfCluster(p.Labels) {
			h.PVCs = append(h.PVCs, p)
		}
	}
	scs, err := c.Kube.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
	h.StorageClasses = items(h.Errors, KindStorageClass, "", err, func() []storagev1.StorageClass { return scs.Items })
	claims, err := core.ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: t.ClusterSelector() + "," + staticip.LabelClaim})
	h.AddressClaims = items(h.Errors, KindAddressClaim, ns, err, func() []corev1.ConfigMap { return claims.Items })
	cloudInit, err := core.Secrets(ns).List(ctx, own)
	h.CloudInit = items(h.Errors, KindSecret, ns, err, func() []corev1.Secret { return cloudInit.Items })
	sas, err := core.ServiceAccounts(ns).List(ctx, creds)
	h.ServiceAccounts = items(h.Errors, KindServiceAccount, ns, err, func() []corev1.ServiceAccount { return sas.Items })
	rbs, err := rbac.RoleBindings(ns).List(ctx, creds)
	h.RoleBindings = items(h.Errors, KindRoleBinding, ns, err, func() []rbacv1.RoleBinding { return rbs.Items })
	// One list of this tool's ClusterRoleBindings: the cluster's own (made
	// with the old cluster-wide CSI binding) and the namespace's grant.
	crbs, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{LabelSelector: addons.LabelManagedBy + "=" + addons.ManagedBy})
	for _, b := range items(h.Errors, KindClusterRoleBinding, "", err, func() []rbacv1.ClusterRoleBinding { return crbs.Items }) {
		switch {
		case credentials.IsOwned(b.Labels, t.Cluster):
			h.ClusterRoleBindings = append(h.ClusterRoleBindings, b)
		case b.Labels[credentials.LabelGuestNamespace] == ns:
			h.GrantBindings = append(h.GrantBindings, b)
		}
	}
	guests, err := core.ServiceAccounts(ns).List(ctx, metav1.ListOptions{LabelSelector: credentials.GuestServiceAccountSelector})
	for _, sa := range items(h.Errors, KindServiceAccount, ns, err, func() []corev1.ServiceAccount { return guests.Items }) {
		if credentials.IsGuestServiceAccount(sa.Labels) {
			h.GuestServiceAccounts = append(h.GuestServiceAccounts, sa.Name)
		}
	}
	for _, shared := range credentials.SharedNamespaces() {
		rb, err := rbac.RoleBindings(shared).Get(ctx, credentials.GrantBindingName(ns), metav1.GetOptions{})
		switch {
		case err == nil && credentials.IsGrantObject(rb.Labels):
			h.GrantRoleBindings = append(h.GrantRoleBindings, *rb)
		case err != nil && !apierrors.IsNotFound(err):
			record(h.Errors, KindRoleBinding, shared, err)
		}
	}
	tokens, err := core.Secrets(ns).List(ctx, creds)
	h.TokenSecrets = c.tokenSecrets(ctx, items(h.Errors, KindSecret, ns, err, func() []corev1.Secret { return tokens.Items }), authTokens)
	return h
}

// tokenSecrets drops the Secrets' data, keeping whether each was filled and
// whether its token authenticates.
func (c *Clients) tokenSecrets(ctx context.Context, secrets []corev1.Secret, authenticate bool) []TokenSecret {
	out := make([]TokenSecret, 0, len(secrets))
	for _, s := range secrets {
		ts := TokenSecret{
			Namespace: s.Namespace, Name: s.Name, UID: string(s.UID), Labels: s.Labels,
			ServiceAccount: s.Annotations[corev1.ServiceAccountNameKey],
			Deleting:       s.DeletionTimestamp != nil,
		}
		if token := string(s.Data[corev1.ServiceAccountTokenKey]); token != "" {
			ts.Filled = true
			if !authenticate {
				out = append(out, ts)
				continue
			}
			cfg := rest.AnonymousClientConfig(c.Config)
			cfg.BearerToken = token
			a := Authenticate(ctx, cfg, "Secret "+s.Namespace+"/"+s.Name)
			ts.Auth = &a
		}
		out = append(out, ts)
	}
	return out
}
