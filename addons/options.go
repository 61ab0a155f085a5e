package addons

import (
	"errors"
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Labels every add-on object carries; PruneSelector selects them all.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelName      = "app.kubernetes.io/name"
	LabelVersion   = "app.kubernetes.io/version"
	ManagedBy      = "harvester-bootstrap"
	PartOf         = "harvester-guest-addons"
	PruneSelector  = LabelManagedBy + "=" + ManagedBy + "," + LabelPartOf + "=" + PartOf

	// CloudConfigKey is the key of the cloud-config Secret holding the
	// kubeconfig for the Harvester cluster.
	CloudConfigKey = "cloud-config"
	// DefaultCloudConfigSecret names that Secret.
	DefaultCloudConfigSecret = "harvester-cloud-config"
	// DefaultNamespace is where the add-ons run in the guest cluster.
	DefaultNamespace = "kube-system"

	CCMName        = "harvester-cloud-provider"
	CSIName        = "harvester-csi-driver"
	CSIDriverName  = "driver.harvesterhci.io"
	StorageClass   = "harvester"
	defaultCCMArgs = "--cloud-config=/etc/kubernetes/cloud-config"
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
	CCMReplicas   int32
	CSIReplicas   int32
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
		CCMReplicas:       2,
		CSIReplicas:       3,
	}
}

var (
	tagRe      = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	registryRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?(:[0-9]+)?(/[a-z0-9._-]+)*$`)
)

// Validate reports every problem with o at once.
func (o Options) Validate() error {
	var errs []error
	if !o.CCM && !o.CSI {
		errs = append(errs, errors.New("no add-on selected: enable the cloud provider and/or the CSI driver"))
	}
	if o.CCM {
		if o.ClusterName == "" {
			errs = append(errs, errors.New("cluster-name: required for the cloud provider (it owns the Harvester load balancers; the CCM default \"kubernetes\" breaks IP-pool matching)"))
		} else if msgs := validation.IsDNS1123Label(o.ClusterName); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("cluster-name %q: must be a DNS-1123 label (lower-case letters, digits, '-', at most 63 chars)", o.ClusterName))
		}
		if o.CCMReplicas < 1 {
			errs = append(errs, fmt.Errorf("ccm-replicas %d: must be at least 1", o.CCMReplicas))
		}
	}
	if o.CSI && o.CSIReplicas < 1 {
		errs = append(errs, fmt.Errorf("csi-replicas %d: must be at least 1", o.CSIReplicas))
	}
	if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q: must be a DNS-1123 label", o.Namespace))
	}
	if msgs := validation.IsDNS1123Subdomain(o.CloudConfigSecret); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("cloud-config-secret %q: must be a DNS-1123 subdomain", o.CloudConfigSecret))
	}
	if o.ImageRegistry != "" && !registryRe.MatchString(o.ImageRegistry) {
		errs = append(errs, fmt.Errorf("image-registry %q: must be a host[:port][/path] without scheme or trailing slash, e.g. registry.example.com:5000/mirror", o.ImageRegistry))
	}
	for name, img := range map[string]Image{
		"ccm-version": o.Versions.CloudProvider, "csi-version": o.Versions.CSIDriver,
		"node-driver-registrar": o.Versions.NodeDriverRegistrar, "csi-provisioner": o.Versions.Provisioner,
		"csi-attacher": o.Versions.Attacher, "csi-resizer": o.Versions.Resizer, "csi-snapshotter": o.Versions.Snapshotter,
	} {
		if !tagRe.MatchString(img.Tag) {
			errs = append(errs, fmt.Errorf("%s %q: not a valid image tag (letters, digits, '_', '.', '-')", name, img.Tag))
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
