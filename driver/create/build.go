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
	"github.com/harvester-kit/harvester-machine/driver/precheck"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/guest/cloudinit"
)

// built is the machine as planned: the plan, its cloud-init Secret and
// its VM, not yet created.
type built struct {
	plan   vmspec.VMPlan
	secret *corev1.Secret
	vm     *kubevirtv1.VirtualMachine
}

// Read is what a create builds the machine from, as the pre-create check
// read it: each image's facts and each network's managed-DHCP IPPool (nil:
// none), by "<namespace>/<name>", and the key pair's public key ("":
// none).
type Read struct {
	Images        map[string]vmspec.ImageFacts
	Pools         map[string]*config.ObjectRef
	KeyPairPublic string
}

// build builds the labelled Secret and VM from what the pre-create check
// read (r.Read), or, for a create without one in this process, from what
// it reads now.
func build(ctx context.Context, api *harvesterapi.API, m *machine.Machine, r Request) (built, error) {
	in, read := r.Inputs, r.Read
	if read == nil {
		images, err := readImages(ctx, api, m, in)
		if err != nil {
			return built{}, err
		}
		read = &Read{Images: images}
	}
	plan, err := vmspec.PlanFromConfig(m.Config, in, m.Name, read.Images)
	if err != nil {
		return built{}, fmt.Errorf("plan VM: %w", err)
	}
	plan = plan.OwnedBy(m.Ownership.MachineID)
	if r.Read == nil {
		if err := read.networksAndKeyPair(ctx, api, plan); err != nil {
			return built{}, err
		}
	}
	for i, nic := range plan.NICs {
		plan.NICs[i].DHCPPool = read.Pools[nic.Network.String()]
	}
	keys, err := prepareSSHKeys(m, r.KeyPath, plan.KeyPair, read.KeyPairPublic)
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
			return nil, harvesterapi.NotFoundOr(err, fmt.Errorf("image %s does not exist; nothing was created", ref))
		}
		if ok, msg := harvesterapi.ConditionTrue(img.Status.Conditions, "Imported"); !ok {
			return nil, fmt.Errorf("image %s is not imported (condition Imported is not True%s); nothing was created", ref, harvesterapi.MessageSuffix(msg))
		}
		images[ref.String()] = vmspec.ImageFacts{StorageClassName: img.Status.StorageClassName, VirtualSizeBytes: img.Status.VirtualSize}
	}
	return images, nil
}

// networksAndKeyPair reads the planned NICs' networks (recording each
// one's managed-DHCP IPPool) and the key pair.
func (read *Read) networksAndKeyPair(ctx context.Context, api *harvesterapi.API, plan vmspec.VMPlan) error {
	read.Pools = map[string]*config.ObjectRef{}
	for _, nic := range plan.NICs {
		labels, err := api.GetNetwork(ctx, nic.Network.Namespace, nic.Network.Name)
		if err != nil {
			return harvesterapi.NotFoundOr(err, fmt.Errorf("network %s does not exist; nothing was created", nic.Network))
		}
		read.Pools[nic.Network.String()] = precheck.PoolOf(labels)
	}
	if plan.KeyPair == nil {
		return nil
	}
	var err error
	read.KeyPairPublic, err = readKeyPair(ctx, api, plan.KeyPair)
	return err
}

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
