package create

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/cloudcred"
	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
	"github.com/harvester-kit/harvester-machine/internal/dhcpapi"
)

// built is the machine as planned: the plan, its cloud-init Secret and
// its VM, not yet created.
type built struct {
	plan   vmspec.VMPlan
	secret *corev1.Secret
	vm     *kubevirtv1.VirtualMachine
}

// build resolves the images and builds the labelled Secret and VM. The
// images, networks and key pair were read by the pre-create check and are
// followed since (harvesterapi.readFollowed): reading them here costs no
// request and sees what changed meanwhile.
func build(ctx context.Context, api *harvesterapi.API, m *machine.Machine, r Request) (built, error) {
	in := r.Inputs
	images, err := readImages(ctx, api, m, in)
	if err != nil {
		return built{}, nothingCreated(err)
	}
	plan, err := vmspec.PlanFromConfig(m.Config, in, m.Name, images)
	if err != nil {
		return built{}, fmt.Errorf("plan VM: %w", err)
	}
	plan = plan.OwnedBy(m.Ownership.MachineID)
	if err := readNetworks(ctx, api, plan.NICs); err != nil {
		return built{}, nothingCreated(err)
	}
	keys, err := prepareSSHKeys(ctx, api, m, r.KeyPath, plan.KeyPair)
	if err != nil {
		return built{}, err
	}
	files, err := cloudcred.Files(ctx, api, m, plan.NICs)
	if err != nil {
		return built{}, err
	}
	userData, err := renderUserData(m.Config, r, keys, files)
	if err != nil {
		return built{}, fmt.Errorf("build cloud-init user data: %w", err)
	}
	if err := config.CheckSecretSize(len(userData), len(m.Config.NetworkData), config.SecretParts(m.Config)); err != nil {
		return built{}, err
	}
	vm, err := vmspec.BuildVM(plan)
	if err != nil {
		return built{}, fmt.Errorf("build VM: %w", err)
	}
	return built{plan: plan, secret: vmspec.BuildUserDataSecret(plan, userData, []byte(m.Config.NetworkData)), vm: vm}, nil
}

// readImages reads the machine's images, each of which must be imported.
func readImages(ctx context.Context, api *harvesterapi.API, m *machine.Machine, in config.Inputs) (map[string]vmspec.ImageFacts, error) {
	refs, err := in.ImageRefs(m.Config.VMNamespace)
	if err != nil {
		return nil, fmt.Errorf("plan VM: %w", err)
	}
	images := map[string]vmspec.ImageFacts{}
	for _, ref := range refs {
		img, err := api.GetImage(ctx, ref.Namespace, ref.Name)
		if err != nil {
			return nil, harvesterapi.NotFoundOr(err, fmt.Errorf("image %s does not exist", ref))
		}
		if ok, msg := harvesterapi.ConditionTrue(img.Status.Conditions, "Imported"); !ok {
			return nil, fmt.Errorf("image %s is not imported (condition Imported is not True%s)", ref, harvesterapi.MessageSuffix(msg))
		}
		images[ref.String()] = vmspec.ImageFacts{StorageClassName: img.Status.StorageClassName, VirtualSizeBytes: img.Status.VirtualSize}
	}
	return images, nil
}

// readNetworks reads the NICs' networks and records the managed-DHCP pool
// of each. A network gone since the pre-create check would only make
// KubeVirt fail to start the VM.
func readNetworks(ctx context.Context, api *harvesterapi.API, nics []vmspec.NICPlan) error {
	for i, nic := range nics {
		labels, err := api.GetNetwork(ctx, nic.Network.Namespace, nic.Network.Name)
		if err != nil {
			return harvesterapi.NotFoundOr(err, fmt.Errorf("network %s does not exist", nic.Network))
		}
		if ns, name := dhcpapi.PoolOf(labels); name != "" {
			nics[i].DHCPPool = &config.ObjectRef{Namespace: ns, Name: name}
		}
	}
	return nil
}

// nothingCreated says of a create's error that it came before anything
// was made.
func nothingCreated(err error) error { return fmt.Errorf("%w; nothing was created", err) }

// renderUserData is the machine's user data with its SSH keys and
// cloud-provider files: the document validation merged, or, for a machine
// loaded from its stored config, merged now.
func renderUserData(c config.Config, r Request, keys []string, files []cloudinit.WriteFile) ([]byte, error) {
	doc := r.Inputs.Cloudinit
	if doc == nil {
		var err error
		if doc, err = config.UserDataDocument(c, r.Inputs, r.SSHUser); err != nil {
			return nil, err
		}
	}
	return doc.Render(keys, files)
}
