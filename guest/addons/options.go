package addons

import (
	"errors"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/internal/field"
)

// Labels every add-on object carries; PruneSelector selects them all.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelName      = "app.kubernetes.io/name"
	LabelVersion   = "app.kubernetes.io/version"
	ManagedBy      = "harvester-bootstrap"
	PartOf         = "harvester-guest-addons"
	// FieldManager is the server-side apply field manager of harvester-bootstrap.
	FieldManager  = ManagedBy
	PruneSelector = LabelManagedBy + "=" + ManagedBy + "," + LabelPartOf + "=" + PartOf

	// CloudConfigKey is the key of the cloud-config Secret holding the
	// kubeconfig for the Harvester cluster.
	CloudConfigKey = "cloud-config"
	// DefaultCloudConfigSecret names that Secret.
	DefaultCloudConfigSecret = "harvester-cloud-config"
	// DefaultNamespace is where the add-ons run in the guest cluster.
	DefaultNamespace = "kube-system"

	CCMName       = "harvester-cloud-provider"
	CSIName       = "harvester-csi-driver"
	CSIDriverName = "driver.harvesterhci.io"
	StorageClass  = "harvester"
	// CSIHostStorageClassFlag is the CSI driver's flag naming the Harvester
	// StorageClass of its volumes; ParamHostStorageClass is the guest
	// StorageClass parameter that overrides it per class.
	CSIHostStorageClassFlag = "--host-storage-class"
	ParamHostStorageClass   = "hostStorageClass"
	// AnnDefaultStorageClass marks a cluster's default StorageClass.
	AnnDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"
	defaultCCMArgs         = "--cloud-config=/etc/kubernetes/cloud-config"
)

// Options select and parameterise the add-ons.
type Options struct {
	// ClusterName is passed to the CCM as --cluster-name; it names and owns
	// the Harvester load balancers of this guest cluster.
	ClusterName string
	// Namespace in the guest cluster (default kube-system).
	Namespace string
	// CloudConfigSecret names the Secret (key cloud-config) with the
	// Harvester kubeconfig.
	CloudConfigSecret string
	// ImageRegistry replaces the registry of every image when set.
	ImageRegistry string
	Versions      Versions
	CCM           bool
	CSI           bool
	// KubeVIP deploys kube-vip with the cloud provider (as Harvester's chart
	// does by default); it announces the LoadBalancer addresses.
	KubeVIP bool
	// LB are the cloud provider's network options and kube-vip's settings.
	LB          LoadBalancing
	CCMReplicas int32
	CSIReplicas int32
	// HostStorageClass is the Harvester StorageClass CSI volumes use ("" = Harvester's default).
	HostStorageClass string
}

// DefaultOptions returns options for both add-ons with pinned versions.
func DefaultOptions(clusterName string) Options {
	return Options{
		ClusterName:       clusterName,
		Namespace:         DefaultNamespace,
		CloudConfigSecret: DefaultCloudConfigSecret,
		Versions:          DefaultVersions(),
		CCM:               true,
		CSI:               true,
		KubeVIP:           true,
		CCMReplicas:       2,
		CSIReplicas:       3,
	}
}

var (
	tagRe      = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	registryRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]+)?(/[a-z0-9._-]+)*$`)
)

// Input fields, as problems name them (a CLI renames them to its flags).
const (
	FieldCCM               = "cloud provider"
	FieldCSI               = "CSI driver"
	FieldClusterName       = "cluster name"
	FieldCCMReplicas       = "cloud provider replicas"
	FieldCSIReplicas       = "CSI driver replicas"
	FieldNamespace         = "add-on namespace"
	FieldCloudConfigSecret = "cloud-config Secret name"
	FieldImageRegistry     = "image registry"
	FieldCCMVersion        = "cloud provider version"
	FieldCSIVersion        = "CSI driver version"
	FieldHostStorageClass  = "host storage class"
	FieldKubeVIP           = "kube-vip"
	FieldTrafficPolicy     = "externalTrafficPolicy Local support"
)

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if !o.CCM && !o.CSI {
		errs = append(errs, field.Problem("", "no add-on selected: enable").Referring(FieldCCM, FieldCSI))
	}
	if o.CCM {
		if o.ClusterName == "" {
			errs = append(errs, field.Problem(FieldClusterName, "required for the cloud provider (it owns the Harvester load balancers; the CCM default \"kubernetes\" breaks IP-pool matching)"))
		} else if msgs := validation.IsDNS1123Label(o.ClusterName); len(msgs) > 0 {
			errs = append(errs, field.Invalid(FieldClusterName, o.ClusterName, "must be a DNS-1123 label (lower-case letters, digits, '-', at most 63 chars)"))
		}
		if o.CCMReplicas < 1 {
			errs = append(errs, field.Invalid(FieldCCMReplicas, strconv.Itoa(int(o.CCMReplicas)), "must be at least 1"))
		}
		errs = append(errs, o.LB.Validate())
		if o.LB.hasNetworkFlags() && !o.Versions.CloudProvider.AtLeast(ccmNetworkFlagsSince) {
			errs = append(errs, field.Invalid(FieldCCMVersion, o.Versions.CloudProvider.Tag, "the network options need the cloud provider %s or newer; or leave out", ccmNetworkFlagsSince).
				Referring(FieldManagementNetwork, FieldNodeIPCIDR, FieldNodeExcludeIPRanges))
		}
	} else if o.LB.hasNetworkFlags() {
		errs = append(errs, field.Problem("", "the network options are the cloud provider's flags; enable").Referring(FieldCCM))
	}
	if (!o.CCM || !o.KubeVIP) && (o.LB.VIPInterface != "" || o.LB.TrafficPolicyLocal) {
		errs = append(errs, field.Problem("", "the kube-vip interface and externalTrafficPolicy Local support need kube-vip, which comes with the cloud provider; enable").
			Referring(FieldCCM, FieldKubeVIP))
	}
	if o.CSI && o.CSIReplicas < 1 {
		errs = append(errs, field.Invalid(FieldCSIReplicas, strconv.Itoa(int(o.CSIReplicas)), "must be at least 1"))
	}
	if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, field.Invalid(FieldNamespace, o.Namespace, "must be a DNS-1123 label"))
	}
	if msgs := validation.IsDNS1123Subdomain(o.CloudConfigSecret); len(msgs) > 0 {
		errs = append(errs, field.Invalid(FieldCloudConfigSecret, o.CloudConfigSecret, "must be a DNS-1123 subdomain"))
	}
	if o.HostStorageClass != "" {
		if msgs := validation.IsDNS1123Subdomain(o.HostStorageClass); len(msgs) > 0 {
			errs = append(errs, field.Invalid(FieldHostStorageClass, o.HostStorageClass, "must be the name of a Harvester StorageClass: a DNS-1123 subdomain (lower-case letters, digits, '-', '.', at most 253 characters)"))
		}
	}
	if o.ImageRegistry != "" && !registryRe.MatchString(o.ImageRegistry) {
		errs = append(errs, field.Invalid(FieldImageRegistry, o.ImageRegistry, "must be a host[:port][/path] without scheme or trailing slash, e.g. registry.example.com:5000/mirror"))
	}
	for name, img := range map[string]Image{
		FieldCCMVersion: o.Versions.CloudProvider, FieldCSIVersion: o.Versions.CSIDriver,
		"node-driver-registrar version": o.Versions.NodeDriverRegistrar, "csi-provisioner version": o.Versions.Provisioner,
		"csi-attacher version": o.Versions.Attacher, "csi-resizer version": o.Versions.Resizer, "csi-snapshotter version": o.Versions.Snapshotter,
		"kube-vip version": o.Versions.KubeVIP,
	} {
		if !tagRe.MatchString(img.Tag) {
			errs = append(errs, field.Invalid(name, img.Tag, "not a valid image tag (letters, digits, '_', '.', '-')"))
		}
	}
	return errors.Join(errs...)
}

func (o Options) labels(name, version string) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelPartOf:    PartOf,
		LabelName:      name,
		LabelVersion:   version,
	}
}
