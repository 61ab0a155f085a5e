// Package precheck is the pre-create checks that need the cluster: the
// images, storage classes, networks and key pair the machine uses exist
// and are ready, no volume or VM instance holds its names, and the
// credential has every right the driver uses. The flags' checks are in
// config; the quotas and vGPU room in capacity.
package precheck

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// Images checks that every image exists, is imported and has a
// storage class. It returns the storage classes to check (name -> who
// uses it): those --disk-info names; an imported image's class is the one
// Harvester made for the image before marking it imported, so reading the
// image proves it. nsSeen: an image was read in the VM namespace, which
// proves that the namespace exists.
func Images(ctx context.Context, api *harvesterapi.API, m *machine.Machine, in config.Inputs) (images map[string]vmspec.ImageFacts, storageClasses map[string]string, nsSeen bool, problems []error) {
	storageClasses, images = map[string]string{}, map[string]vmspec.ImageFacts{}
	refs, err := in.ImageRefs(m.Config.VMNamespace)
	if err != nil {
		problems = append(problems, err)
	}
	virtualSizes := map[string]int64{}
	for _, ref := range refs {
		img, err := api.GetImage(ctx, ref.Namespace, ref.Name)
		if err != nil {
			problems = append(problems, harvesterapi.NotFoundOr(err, fmt.Errorf("image %s does not exist (see --%s / --%s)", ref, config.FlagImageName, config.FlagDiskInfo)))
			continue
		}
		virtualSizes[ref.String()] = img.Status.VirtualSize
		images[ref.String()] = vmspec.ImageFacts{StorageClassName: img.Status.StorageClassName, VirtualSizeBytes: img.Status.VirtualSize}
		nsSeen = nsSeen || ref.Namespace == m.Config.VMNamespace
		if ok, msg := harvesterapi.ConditionTrue(img.Status.Conditions, "Imported"); !ok {
			problems = append(problems, fmt.Errorf("image %s is not imported yet (condition Imported is not True%s)", ref, harvesterapi.MessageSuffix(msg)))
		} else if img.Status.StorageClassName == "" {
			problems = append(problems, fmt.Errorf("image %s has no storage class in its status", ref))
		}
	}
	problems = append(problems, vmspec.DisksFitImages(m.Config, in, virtualSizes)...)
	if m.Config.DiskInfo != "" {
		for i, disk := range in.Disks {
			if disk.ImageName == "" && disk.StorageClassName != "" {
				storageClasses[disk.StorageClassName] = fmt.Sprintf("--%s disks[%d]", config.FlagDiskInfo, i)
			}
		}
	}
	return images, storageClasses, nsSeen, problems
}

// StorageClasses checks that the storage classes exist (skipped with a
// warning when the credential may not read them).
func StorageClasses(ctx context.Context, api *harvesterapi.API, m *machine.Machine, storageClasses map[string]string) []error {
	var problems []error
	for _, sc := range slices.Sorted(maps.Keys(storageClasses)) {
		if _, err := api.GetStorageClass(ctx, sc); apierrors.IsForbidden(err) {
			log.Warnf("cannot read storage class %s (forbidden); skipping that check", sc)
		} else if err != nil {
			problems = append(problems, harvesterapi.NotFoundOr(err, fmt.Errorf("storage class %q (used by %s) does not exist", sc, storageClasses[sc])))
		}
	}
	return problems
}

// Networks checks that every interface's network exists; managedDHCP:
// Harvester's managed DHCP serves one of them (its controller then makes
// the VM's VirtualMachineNetworkConfig, which quotas count).
func Networks(ctx context.Context, api *harvesterapi.API, m *machine.Machine, in config.Inputs) (managedDHCP bool, problems []error) {
	nics, err := vmspec.PlanNICs(m.Config, in)
	if err != nil {
		return false, []error{err}
	}
	for _, nic := range nics {
		labels, err := api.GetNetwork(ctx, nic.Network.Namespace, nic.Network.Name)
		if err != nil {
			problems = append(problems, harvesterapi.NotFoundOr(err, fmt.Errorf("network %s does not exist (see --%s / --%s)", nic.Network, config.FlagNetworkName, config.FlagNetworkInfo)))
			continue
		}
		if _, pool := dhcpapi.PoolOf(labels); pool != "" {
			managedDHCP = true
		}
	}
	return managedDHCP, problems
}

// KeyPair checks that the key pair, if any, exists and is validated.
func KeyPair(ctx context.Context, api *harvesterapi.API, m *machine.Machine) []error {
	ref, err := vmspec.KeyPairRef(m.Config)
	if err != nil {
		return []error{err}
	}
	if ref == nil {
		return nil
	}
	kp, err := api.GetKeyPair(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return []error{harvesterapi.NotFoundOr(err, config.FlagProblem(config.FlagKeyPairName, "key pair %s does not exist", ref))}
	}
	if ok, msg := harvesterapi.ConditionTrue(kp.Status.Conditions, "validated"); !ok {
		return []error{config.FlagProblem(config.FlagKeyPairName, "key pair %s is not validated%s", ref, harvesterapi.MessageSuffix(msg))}
	}
	return nil
}

// NamesFree reports every disk volume (claim) of the machine that
// already exists: left from an earlier machine of this name, it would be
// booted again; and a VM instance of the machine's name (left running by a
// VM deleted with --cascade=orphan): no new VM of the name could run, and
// the create would wait out its timeout. The VMI is read with a watch that
// Create's wait for the address goes on from (one request for both). The
// VM and the cloud-init Secret
// need no read here: Create
// makes the Secret first and the VM next, and a name taken by another
// object fails that create with nothing of this machine left (createSecret,
// createVM), so two requests per machine are saved.
func NamesFree(ctx context.Context, api *harvesterapi.API, m *machine.Machine, claims []string) []error {
	ns := m.Config.VMNamespace
	var problems []error
	vmi, err := api.ReadVMIForWait(ctx, ns, m.Name)
	switch {
	case err != nil:
		problems = append(problems, fmt.Errorf("check that no VM instance holds the name %s: %w", m.Name, err))
	case vmi != nil:
		problems = append(problems, vmiHoldsName(vmi))
	}
	for _, c := range claims {
		_, err := api.GetPVC(ctx, ns, c)
		switch {
		case err == nil:
			problems = append(problems, fmt.Errorf("a volume (PVC) named %s already exists in namespace %s (left from an earlier machine of this name, or another's); "+
				"choose another machine name or remove it", c, ns))
		case !apierrors.IsNotFound(err):
			problems = append(problems, fmt.Errorf("check that the volume (PVC) name %s is free: %w", c, err))
		}
	}
	return problems
}

// vmiHoldsName is pre-create's problem for a VMI that holds the machine's
// name (no VM of the name can run while it exists), saying whose it is.
func vmiHoldsName(vmi *kubevirtv1.VirtualMachineInstance) error {
	return fmt.Errorf("a VM instance (VMI) %s/%s already exists and holds the machine's name: %s; "+
		"remove it (kubectl delete vmi -n %s %s) or `rancher-machine rm` the machine it belongs to, or choose another name",
		vmi.Namespace, vmi.Name, whoseVMI(vmi), vmi.Namespace, vmi.Name)
}

// whoseVMI says what a VMI's owner references and labels show about whose
// it is.
func whoseVMI(vmi *kubevirtv1.VirtualMachineInstance) string {
	var parts []string
	if c := metav1.GetControllerOf(vmi); c != nil {
		parts = append(parts, fmt.Sprintf("it is the instance of %s %s (UID %s)", c.Kind, c.Name, c.UID))
	} else {
		parts = append(parts, "it belongs to no VM (a VM deleted with --cascade=orphan leaves its instance running)")
	}
	l := vmi.Labels
	switch {
	case l[harvester.LabelMachineID] != "":
		who := "made by the machine with " + harvester.LabelMachineID + "=" + l[harvester.LabelMachineID]
		if c := l[harvester.LabelGuestCluster]; c != "" {
			who += " of guest cluster " + c
		}
		parts = append(parts, who)
	case l[harvester.LabelCreator] != "":
		parts = append(parts, "made by "+l[harvester.LabelCreator])
	default:
		parts = append(parts, "it carries none of the driver's labels")
	}
	return strings.Join(parts, ", ")
}
