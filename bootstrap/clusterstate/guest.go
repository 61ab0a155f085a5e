package clusterstate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/guest/addons"
)

// Guest-side kinds the snapshot lists besides the shared ones (the
// guest's ClusterRoleBindings are KindClusterRoleBinding in Guest.Errors).
const (
	KindEndpointSlice = "EndpointSlice"
	KindClusterRole   = "ClusterRole"
)

// FetchGuest lists the guest cluster's nodes, Services (with their
// EndpointSlices), the kube-system Deployments and DaemonSets (where the
// cloud provider and kube-vip run), the ClusterRoles and bindings (kube-vip's
// rights), the PVCs, StorageClasses and VolumeAttachments (the CSI
// driver's work). Each kind is listed once.
func FetchGuest(ctx context.Context, guest kubernetes.Interface) Guest {
	g := FetchGuestForGC(ctx, guest)
	fail := g.failer()
	if l, err := guest.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{}); err == nil {
		g.EndpointSlices = l.Items
	} else {
		fail(KindEndpointSlice, "", err)
	}
	fetchWorkloads(ctx, guest, &g)
	fetchRBAC(ctx, guest, &g)
	fetchStorage(ctx, guest, &g)
	return g
}

// FetchGuestForGC lists only what gc needs: the guest's Services and its
// nodes (whose providerIDs show which cluster it is). Each list is read to
// its last page and must be complete (ListAll).
func FetchGuestForGC(ctx context.Context, guest kubernetes.Interface) Guest {
	g := Guest{Errors: map[string]string{}}
	rc := guest.CoreV1().RESTClient()
	var err error
	if g.Services, err = ListAll[corev1.Service](ctx, rc, "services", "ServiceList"); err != nil {
		g.failer()(KindService, "", err)
	}
	if g.Nodes, err = ListAll[corev1.Node](ctx, rc, "nodes", "NodeList"); err != nil {
		g.failer()(KindNode, "", err)
	}
	return g
}

// listPageSize is how many objects ListAll asks for per request.
const listPageSize = 500

// listPage is one page of a list as the API server sends it; Items is nil
// when the answer has no items field or items: null.
type listPage[T any] struct {
	Kind     string          `json:"kind"`
	Metadata metav1.ListMeta `json:"metadata"`
	Items    *[]T            `json:"items"`
}

// ListAll lists resource (core/v1, every namespace) page by page until the
// API server sends no continue token. It refuses an answer that is not a
// list of kind listKind with an items field (`{}`, items: null, another
// kind), a continue token seen before, and more than a million objects: a
// list taken for complete decides what gc deletes.
func ListAll[T any](ctx context.Context, rc rest.Interface, resource, listKind string) ([]T, error) {
	var out []T
	seen := map[string]bool{}
	token := ""
	for {
		req := rc.Get().Resource(resource).Param("limit", strconv.Itoa(listPageSize))
		if token != "" {
			req = req.Param("continue", token)
		}
		raw, err := req.Do(ctx).Raw()
		if err != nil {
			return nil, err
		}
		var page listPage[T]
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, fmt.Errorf("decode the %s answer: %w", listKind, err)
		}
		switch {
		case page.Kind != listKind:
			return nil, fmt.Errorf("the answer is not a %s (kind %q): refusing to take it for the list", listKind, page.Kind)
		case page.Items == nil:
			return nil, fmt.Errorf("the %s answer has no items field (or items: null): refusing to take it for the list", listKind)
		}
		out = append(out, *page.Items...)
		token = page.Metadata.Continue
		switch {
		case token == "":
			return out, nil
		case seen[token]:
			return nil, fmt.Errorf("the %s answer repeats the continue token of an earlier page: the list would never end", listKind)
		case len(out) > maxListed:
			return nil, fmt.Errorf("the %s has more than %d objects: refusing to read on", listKind, maxListed)
		}
		seen[token] = true
	}
}

// maxListed bounds ListAll against a server that pages forever.
const maxListed = 1_000_000

func (g *Guest) failer() func(kind, ns string, err error) {
	return func(kind, ns string, err error) {
		where := "the guest cluster"
		if ns != "" {
			where += " (namespace " + ns + ")"
		}
		g.Errors[kind] = fmt.Sprintf("list %ss in %s: %v", kind, where, err)
	}
}

func fetchWorkloads(ctx context.Context, guest kubernetes.Interface, g *Guest) {
	apps := guest.AppsV1()
	if l, err := apps.Deployments(addons.DefaultNamespace).List(ctx, metav1.ListOptions{}); err == nil {
		g.Deployments = l.Items
	} else {
		g.failer()(KindWorkload, addons.DefaultNamespace, err)
	}
	if l, err := apps.DaemonSets(addons.DefaultNamespace).List(ctx, metav1.ListOptions{}); err == nil {
		g.DaemonSets = l.Items
	} else {
		g.failer()(KindWorkload, addons.DefaultNamespace, err)
	}
	if l, err := guest.CoreV1().Pods(addons.DefaultNamespace).List(ctx, metav1.ListOptions{}); err == nil {
		g.SystemPods = l.Items
	} else {
		g.failer()(KindPod, addons.DefaultNamespace, err)
	}
}

func fetchRBAC(ctx context.Context, guest kubernetes.Interface, g *Guest) {
	rbac := guest.RbacV1()
	if l, err := rbac.ClusterRoles().List(ctx, metav1.ListOptions{}); err == nil {
		g.ClusterRoles = l.Items
	} else {
		g.failer()(KindClusterRole, "", err)
	}
	if l, err := rbac.ClusterRoleBindings().List(ctx, metav1.ListOptions{}); err == nil {
		g.ClusterRoleBindings = l.Items
	} else {
		g.failer()(KindClusterRoleBinding, "", err)
	}
}

func fetchStorage(ctx context.Context, guest kubernetes.Interface, g *Guest) {
	if l, err := guest.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{}); err == nil {
		g.PVCs = l.Items
	} else {
		g.failer()(KindPVC, "", err)
	}
	storage := guest.StorageV1()
	if l, err := storage.StorageClasses().List(ctx, metav1.ListOptions{}); err == nil {
		g.StorageClasses = l.Items
	} else {
		g.failer()(KindStorageClass, "", err)
	}
	if l, err := storage.VolumeAttachments().List(ctx, metav1.ListOptions{}); err == nil {
		g.VolumeAttachments = l.Items
	} else {
		g.failer()(KindVolumeAttachment, "", err)
	}
}

// LoadBalancerServices are the Services of type LoadBalancer.
func (g *Guest) LoadBalancerServices() []corev1.Service {
	var out []corev1.Service
	for _, s := range g.Services {
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
			out = append(out, s)
		}
	}
	return out
}

// Service returns the Service namespace/name, or nil.
func (g *Guest) Service(namespace, name string) *corev1.Service {
	for i := range g.Services {
		if s := &g.Services[i]; s.Namespace == namespace && s.Name == name {
			return s
		}
	}
	return nil
}

// Endpoints counts the endpoints with an address in the Service's
// EndpointSlices (label kubernetes.io/service-name), ready or not: kube-vip
// v1.2.2 and v1.2.3 count every address under the Cluster traffic policy
// (measured with the real v1.2.2 in test/e2e/guest; the readiness filter
// is only on kube-vip's main branch, after v1.2.3).
func (g *Guest) Endpoints(svc *corev1.Service) int {
	n := 0
	for _, es := range g.EndpointSlices {
		if es.Namespace != svc.Namespace || es.Labels[discoveryServiceName] != svc.Name {
			continue
		}
		for _, e := range es.Endpoints {
			if len(e.Addresses) > 0 {
				n++
			}
		}
	}
	return n
}

const discoveryServiceName = "kubernetes.io/service-name"
