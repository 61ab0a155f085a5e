package driver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/harvester-kit/harvester-machine/driver/capacity"
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/removal"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// PreCreateCheck checks everything Create needs and reports every problem at
// once: server version, namespace, images (existing and Imported), storage
// classes, networks, key pair (validated), permissions, and that no disk
// volume of the machine's names exists (a taken VM or Secret name fails
// Create's first create, with nothing left). It
// records the cluster's identity in the machine's state. When Harvester
// cannot be reached at all, it stops at the first call with that one error.
func (d *Driver) PreCreateCheck() error {
	api, err := d.client()
	if err != nil {
		return err
	}
	in, err := d.inputs()
	if err != nil {
		return joinProblems("pre-create check failed", []error{err})
	}
	endFailFast := api.FailFast()
	problems := d.preCreateProblems(context.Background(), api, in)
	if err := endFailFast(); err != nil {
		return fmt.Errorf("pre-create check failed: %w", err)
	}
	return joinProblems("pre-create check failed", dedupeCredentialErrors(problems))
}

func (d *Driver) preCreateProblems(ctx context.Context, api *harvesterapi.API, in vmspec.Inputs) []error {
	problems := d.recordCluster(ctx, api)
	if len(problems) == 1 && harvesterapi.IsTerminal(problems[0]) {
		return problems
	}
	problems = append(problems, d.checkPermissions(ctx, api)...)
	images, storageClasses, nsSeen, errs := d.checkImages(ctx, api, in)
	problems = append(problems, errs...)
	problems = append(problems, d.checkNamespace(ctx, api, nsSeen)...)
	problems = append(problems, d.checkStorageClasses(ctx, api, storageClasses)...)
	managedDHCP, errs := d.checkNetworks(ctx, api, in)
	problems = append(problems, errs...)
	problems = append(problems, d.checkKeyPair(ctx, api)...)
	if d.SSHPrivateKeyPath != "" {
		if _, err := readPrivateKeyFile(d.SSHPrivateKeyPath); err != nil {
			problems = append(problems, err)
		}
	}
	problems = append(problems, d.checkCapacity(ctx, api, in, images, managedDHCP)...)
	claims := make([]string, len(in.Disks))
	for i := range in.Disks {
		claims[i] = vmspec.DiskClaimName(d.MachineName, i)
	}
	return append(problems, d.checkNameFree(ctx, api, claims)...)
}

// checkImages checks that every image exists, is imported and has a
// storage class. It returns the storage classes to check (name -> who
// uses it): those --disk-info names; an imported image's class is the one
// Harvester made for the image before marking it imported, so reading the
// image proves it. nsSeen: an image was read in the VM namespace, which
// proves that the namespace exists.
func (d *Driver) checkImages(ctx context.Context, api *harvesterapi.API, in vmspec.Inputs) (images map[string]vmspec.ImageFacts, storageClasses map[string]string, nsSeen bool, problems []error) {
	storageClasses, images = map[string]string{}, map[string]vmspec.ImageFacts{}
	refs, err := in.ImageRefs(d.VMNamespace)
	if err != nil {
		problems = append(problems, err)
	}
	virtualSizes := map[string]int64{}
	for _, ref := range refs {
		img, err := api.GetImage(ctx, ref.Namespace, ref.Name)
		if err != nil {
			problems = append(problems, notFoundOr(err, fmt.Errorf("image %s does not exist (see --%s / --%s)", ref, config.FlagImageName, config.FlagDiskInfo)))
			continue
		}
		virtualSizes[ref.String()] = img.Status.VirtualSize
		images[ref.String()] = vmspec.ImageFacts{StorageClassName: img.Status.StorageClassName, VirtualSizeBytes: img.Status.VirtualSize}
		nsSeen = nsSeen || ref.Namespace == d.VMNamespace
		if ok, msg := harvesterapi.ConditionTrue(img.Status.Conditions, "Imported"); !ok {
			problems = append(problems, fmt.Errorf("image %s is not imported yet (condition Imported is not True%s)", ref, suffix(msg)))
		} else if img.Status.StorageClassName == "" {
			problems = append(problems, fmt.Errorf("image %s has no storage class in its status", ref))
		}
	}
	problems = append(problems, vmspec.DisksFitImages(d.Config, in, virtualSizes)...)
	if d.DiskInfo != "" {
		for i, disk := range in.Disks {
			if disk.ImageName == "" && disk.StorageClassName != "" {
				storageClasses[disk.StorageClassName] = fmt.Sprintf("--%s disks[%d]", config.FlagDiskInfo, i)
			}
		}
	}
	return images, storageClasses, nsSeen, problems
}

// checkStorageClasses checks that the storage classes exist (skipped with a
// warning when the credential may not read them).
func (d *Driver) checkStorageClasses(ctx context.Context, api *harvesterapi.API, storageClasses map[string]string) []error {
	var problems []error
	for _, sc := range slices.Sorted(maps.Keys(storageClasses)) {
		if _, err := api.GetStorageClass(ctx, sc); apierrors.IsForbidden(err) {
			log.Warnf("cannot read storage class %s (forbidden); skipping that check", sc)
		} else if err != nil {
			problems = append(problems, notFoundOr(err, fmt.Errorf("storage class %q (used by %s) does not exist", sc, storageClasses[sc])))
		}
	}
	return problems
}

// checkNetworks checks that every interface's network exists; managedDHCP:
// Harvester's managed DHCP serves one of them (its controller then makes
// the VM's VirtualMachineNetworkConfig, which quotas count).
func (d *Driver) checkNetworks(ctx context.Context, api *harvesterapi.API, in vmspec.Inputs) (managedDHCP bool, problems []error) {
	nics, err := vmspec.PlanNICs(d.Config, in)
	if err != nil {
		return false, []error{err}
	}
	for _, nic := range nics {
		labels, err := api.GetNetwork(ctx, nic.Network.Namespace, nic.Network.Name)
		if err != nil {
			problems = append(problems, notFoundOr(err, fmt.Errorf("network %s does not exist (see --%s / --%s)", nic.Network, config.FlagNetworkName, config.FlagNetworkInfo)))
			continue
		}
		if _, pool := dhcpapi.PoolOf(labels); pool != "" {
			managedDHCP = true
		}
	}
	return managedDHCP, problems
}

// checkKeyPair checks that the key pair, if any, exists and is validated.
func (d *Driver) checkKeyPair(ctx context.Context, api *harvesterapi.API) []error {
	ref, err := vmspec.KeyPairRef(d.Config)
	if err != nil {
		return []error{err}
	}
	if ref == nil {
		return nil
	}
	kp, err := api.GetKeyPair(ctx, ref.Namespace, ref.Name)
	if err != nil {
		return []error{notFoundOr(err, config.FlagProblem(config.FlagKeyPairName, "key pair %s does not exist", ref))}
	}
	if ok, msg := harvesterapi.ConditionTrue(kp.Status.Conditions, "validated"); !ok {
		return []error{config.FlagProblem(config.FlagKeyPairName, "key pair %s is not validated%s", ref, suffix(msg))}
	}
	return nil
}

// checkNameFree reports every disk volume (claim) of the machine that
// already exists: left from an earlier machine of this name, it would be
// booted again; and a VM instance of the machine's name (left running by a
// VM deleted with --cascade=orphan): no new VM of the name could run, and
// the create would wait out its timeout. The VM and the cloud-init Secret
// need no read here: Create
// makes the Secret first and the VM next, and a name taken by another
// object fails that create with nothing of this machine left (createSecret,
// createVM), so two requests per machine are saved.
func (d *Driver) checkNameFree(ctx context.Context, api *harvesterapi.API, claims []string) []error {
	ns := d.VMNamespace
	var problems []error
	vmi, err := api.GetVMI(ctx, ns, d.MachineName)
	switch {
	case err == nil:
		problems = append(problems, removal.VMIHoldsName(vmi))
	case !harvesterapi.ObjectNotFound(err, d.MachineName):
		problems = append(problems, fmt.Errorf("check that no VM instance holds the name %s: %w", d.MachineName, err))
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

// notFoundOr returns the notFound problem for a NotFound, else err.
func notFoundOr(err, notFound error) error {
	if apierrors.IsNotFound(err) {
		return notFound
	}
	return err
}

// dedupeCredentialErrors keeps a single credential error among problems.
func dedupeCredentialErrors(problems []error) []error {
	var out []error
	for _, p := range problems {
		if errors.Is(p, kubeapi.ErrCredentialsRejected) {
			return []error{p}
		}
		out = append(out, p)
	}
	return out
}

func suffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// checkCapacity checks that the machine fits its namespace's quotas and
// its vGPUs have room (see capacity.Checker.Check). images: what
// checkImages read (a machine whose images failed is not planned: that is
// reported); managedDHCP: what checkNetworks found.
func (d *Driver) checkCapacity(ctx context.Context, api *harvesterapi.API, in vmspec.Inputs, images map[string]vmspec.ImageFacts, managedDHCP bool) []error {
	var plan *vmspec.VMPlan
	if p, err := vmspec.PlanFromConfig(d.Config, in, d.MachineName, images); err == nil {
		plan = &p
	}
	return capacity.Check(ctx, api, d.machine(), plan, in.VGPUs, in.Static != nil, managedDHCP)
}
