package sim

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// crdSpec describes one custom resource the simulated Harvester serves.
type crdSpec struct {
	group, version, kind, plural string
	shortNames                   []string
	clusterScoped, status        bool
	columns                      []apiextv1.CustomResourceColumnDefinition
	schema                       *apiextv1.JSONSchemaProps // nil: any field is kept
	annotations                  map[string]string
}

func column(name, path string) apiextv1.CustomResourceColumnDefinition {
	return apiextv1.CustomResourceColumnDefinition{Name: name, Type: "string", JSONPath: path}
}

func boolColumn(name, path string) apiextv1.CustomResourceColumnDefinition {
	return apiextv1.CustomResourceColumnDefinition{Name: name, Type: "boolean", JSONPath: path}
}

// simCRDs are the Harvester, Multus, load-balancer and Longhorn kinds,
// with a status subresource where the real ones have one (KubeVirt's come
// from KubeVirt's own install strategy: sim/kubevirt). The load-balancer kinds
// carry Harvester's structural schema; the others accept any field: the
// simulator's controllers decode them with the real Go types and report
// what does not decode on the object.
var simCRDs = []crdSpec{
	// Harvester's chart gives its image, key pair and setting kinds no
	// subresources (deploy/charts/harvester-crd: `subresources: {}`): their
	// status is written with the object, through Harvester's webhook.
	{group: "harvesterhci.io", version: "v1beta1", kind: "VirtualMachineImage", plural: "virtualmachineimages", shortNames: []string{"vmimage", "vmimages"},
		columns: []apiextv1.CustomResourceColumnDefinition{column("Display-Name", ".spec.displayName"), column("StorageClass", ".status.storageClassName")}},
	{group: "harvesterhci.io", version: "v1beta1", kind: "KeyPair", plural: "keypairs", shortNames: []string{"kp"},
		columns: []apiextv1.CustomResourceColumnDefinition{column("Fingerprint", ".status.fingerPrint")}},
	{group: "harvesterhci.io", version: "v1beta1", kind: "Setting", plural: "settings", clusterScoped: true,
		columns: []apiextv1.CustomResourceColumnDefinition{column("Value", ".value")}},
	{group: "k8s.cni.cncf.io", version: "v1", kind: "NetworkAttachmentDefinition", plural: "network-attachment-definitions", shortNames: []string{"net-attach-def"}},
	// Harvester's LoadBalancer has no status subresource: status is written with the object.
	{group: "loadbalancer.harvesterhci.io", version: "v1beta1", kind: "LoadBalancer", plural: "loadbalancers", shortNames: []string{"lb", "lbs"},
		schema: loadBalancerSchema(),
		columns: []apiextv1.CustomResourceColumnDefinition{column("Description", ".spec.description"), column("Workload-Type", ".spec.workloadType"),
			column("IPAM", ".spec.ipam"), column("Address", ".status.address"), column("Allocated", ".status.allocatedAddress.ip")}},
	{group: "loadbalancer.harvesterhci.io", version: "v1beta1", kind: "IPPool", plural: "ippools", shortNames: []string{"pool", "pools"}, clusterScoped: true, status: true,
		schema: ipPoolSchema(),
		columns: []apiextv1.CustomResourceColumnDefinition{column("Network", ".spec.selector.network"),
			{Name: "Available", Type: "integer", JSONPath: ".status.available"}, {Name: "Total", Type: "integer", JSONPath: ".status.total"}}},
	// Managed DHCP (the vm-dhcp-controller add-on).
	{group: "network.harvesterhci.io", version: "v1alpha1", kind: "IPPool", plural: "ippools", shortNames: []string{"ippl", "ippls"}, status: true,
		columns: []apiextv1.CustomResourceColumnDefinition{column("Network", ".spec.networkName"),
			{Name: "Available", Type: "integer", JSONPath: ".status.ipv4.available"}, {Name: "Used", Type: "integer", JSONPath: ".status.ipv4.used"}}},
	{group: "network.harvesterhci.io", version: "v1alpha1", kind: "VirtualMachineNetworkConfig", plural: "virtualmachinenetworkconfigs", shortNames: []string{"vmnetcfg", "vmnetcfgs"}, status: true,
		columns: []apiextv1.CustomResourceColumnDefinition{column("VMName", ".spec.vmName")}},
	// The kinds the guests' CSI driver reads or writes: remote backups and
	// restores (harvester-crd chart), network filesystems (the
	// networkfs-manager add-on, on by default) and Longhorn's volumes.
	{group: "harvesterhci.io", version: "v1beta1", kind: "VolumeRemoteBackup", plural: "volumeremotebackups", shortNames: []string{"volumeremotebackup", "volumeremotebackups"},
		columns: []apiextv1.CustomResourceColumnDefinition{column("type", ".spec.type"), column("source", ".spec.source"),
			column("Handle", ".status.handle"), column("Provider", ".status.csiProvider"), boolColumn("Success", ".status.success")}},
	{group: "harvesterhci.io", version: "v1beta1", kind: "VolumeRemoteRestore", plural: "volumeremoterestores", shortNames: []string{"volumeremoterestore", "volumeremoterestores"},
		columns: []apiextv1.CustomResourceColumnDefinition{column("type", ".spec.type"), column("from", ".spec.from"), boolColumn("Success", ".status.success")}},
	{group: "harvesterhci.io", version: "v1beta1", kind: "NetworkFilesystem", plural: "networkfilesystems", shortNames: []string{"netfilesystem", "netfilesystems"}, status: true,
		columns: []apiextv1.CustomResourceColumnDefinition{column("DesiredState", ".spec.desiredState"), column("Endpoint", ".status.endpoint"),
			column("EndpointStatus", ".status.status"), column("State", ".status.state"), column("Type", ".status.type")}},
	{group: "longhorn.io", version: "v1beta2", kind: "Volume", plural: "volumes", shortNames: []string{"lhv"}, status: true},
}

// buildCRD is the CustomResourceDefinition object for spec.
func buildCRD(s crdSpec) *apiextv1.CustomResourceDefinition {
	preserve := true
	schema := &apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}
	if s.schema != nil {
		schema = s.schema
	}
	scope := apiextv1.NamespaceScoped
	if s.clusterScoped {
		scope = apiextv1.ClusterScoped
	}
	version := apiextv1.CustomResourceDefinitionVersion{
		Name: s.version, Served: true, Storage: true,
		Schema:                   &apiextv1.CustomResourceValidation{OpenAPIV3Schema: schema},
		AdditionalPrinterColumns: s.columns,
	}
	if s.status {
		version.Subresources = &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}}
	}
	return &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: s.plural + "." + s.group, Labels: map[string]string{simLabel: "true"}, Annotations: s.annotations},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: s.group, Scope: scope,
			Names: apiextv1.CustomResourceDefinitionNames{
				Kind: s.kind, ListKind: s.kind + "List", Plural: s.plural,
				Singular: strings.ToLower(s.kind), ShortNames: s.shortNames,
			},
			Versions: []apiextv1.CustomResourceDefinitionVersion{version},
		},
	}
}

// installCRDs creates every CRD and waits until each is Established.
func installCRDs(ctx context.Context, client apiextclient.Interface) error {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	all := append(append(append([]crdSpec(nil), simCRDs...), webhookCRDs...), apiServerCRDs...)
	for _, s := range all {
		if _, err := crds.Create(ctx, buildCRD(s), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("install CRD %s.%s: %w", s.plural, s.group, err)
		}
	}
	names := make([]string, 0, len(all))
	for _, s := range all {
		names = append(names, s.plural+"."+s.group)
	}
	return waitEstablished(ctx, crds, names)
}

// waitEstablished waits until every CRD named is Established, with one
// list and one watch of all CRDs (a list and a watch for each of the ~70
// made every start ~140 requests, each listing a large CRD).
func waitEstablished(ctx context.Context, crds apiextv1client.CustomResourceDefinitionInterface, names []string) error {
	pending := map[string]bool{}
	for _, n := range names {
		pending[n] = true
	}
	for {
		list, err := crds.List(ctx, metav1.ListOptions{})
		if err != nil {
			return fmt.Errorf("wait for the CRDs to be established: list: %w", err)
		}
		for i := range list.Items {
			if crdEstablished(&list.Items[i]) {
				delete(pending, list.Items[i].Name)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		w, err := crds.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			return fmt.Errorf("wait for the CRDs to be established: watch: %w", err)
		}
		watchEstablished(ctx, w, pending)
		w.Stop()
		if len(pending) == 0 {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("CRDs not established: %s: %w", strings.Join(slices.Sorted(maps.Keys(pending)), ", "), ctx.Err())
		}
		// The watch ended (its timeout, an apiserver restart): list again.
	}
}

// watchEstablished takes the CRDs the watch shows Established out of
// pending, until none is left, the watch ends or ctx is done.
func watchEstablished(ctx context.Context, w watch.Interface, pending map[string]bool) {
	for len(pending) > 0 {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return
			}
			if crd, isCRD := ev.Object.(*apiextv1.CustomResourceDefinition); isCRD && crdEstablished(crd) {
				delete(pending, crd.Name)
			}
		}
	}
}

func crdEstablished(crd *apiextv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
			return true
		}
	}
	return false
}
