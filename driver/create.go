package driver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rancher/machine/libmachine/log"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/cloudinit"
)

// cleanupTimeout bounds the rollback of a failed create.
const cleanupTimeout = 5 * time.Minute

// Create creates the machine's cloud-init Secret and VM and waits until the
// VM runs and has an address. If any step fails, everything created so far
// (VM, its volumes, the Secret) is removed again.
func (d *Driver) Create() (err error) {
	api, err := d.client()
	if err != nil {
		return err
	}
	ctx := context.Background()
	var cleanups []func(context.Context) error
	defer func() {
		if err == nil {
			return
		}
		log.Warnf("%s: create failed, removing what was created", d.MachineName)
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		var cerrs []error
		for i := len(cleanups) - 1; i >= 0; i-- {
			if cerr := cleanups[i](cctx); cerr != nil {
				cerrs = append(cerrs, cerr)
			}
		}
		if len(cerrs) > 0 {
			err = fmt.Errorf("%w; cleanup after the failed create also failed: %w", err, errors.Join(cerrs...))
		}
	}()

	images := map[string]ImageFacts{}
	for _, ref := range ImageRefs(d.Config) {
		ns, name, _ := splitNamespaced(ref, d.VMNamespace)
		img, err := api.image(ctx, ns, name)
		if err != nil {
			return apiError("get image "+ref, err)
		}
		images[ref] = ImageFacts{StorageClassName: img.Status.StorageClassName, VirtualSizeBytes: img.Status.VirtualSize}
	}
	plan, err := PlanFromConfig(d.Config, d.MachineName, images)
	if err != nil {
		return fmt.Errorf("plan VM: %w", err)
	}
	keys, err := d.prepareSSHKeys(ctx, api, plan.KeyPair)
	if err != nil {
		return err
	}
	userData, err := cloudinit.Build(cloudinit.Input{
		User: d.GetSSHUsername(), SSHAuthorizedKeys: keys, Password: d.SSHPassword,
		InstallQemuGuestAgent: !d.SkipQemuGuestAgent,
		UserData:              []byte(d.UserData), CloudConfig: []byte(d.CloudConfig),
	})
	if err != nil {
		return fmt.Errorf("build cloud-init user data: %w", err)
	}
	secret := BuildUserDataSecret(plan, userData, []byte(d.NetworkData))
	vm, err := BuildVM(plan)
	if err != nil {
		return fmt.Errorf("build VM: %w", err)
	}

	secrets := api.kube.CoreV1().Secrets(d.VMNamespace)
	log.Infof("%s: creating cloud-init Secret %s/%s", d.MachineName, d.VMNamespace, secret.Name)
	if err := api.call(ctx, func(c context.Context) error {
		_, err := secrets.Create(c, secret, metav1.CreateOptions{})
		return err
	}); err != nil {
		return apiError("create Secret "+secret.Name, err)
	}
	cleanups = append(cleanups, func(c context.Context) error { return d.deleteSecret(c, api, secret.Name) })

	log.Infof("%s: creating VM %s/%s (%d CPU, %d GiB, %d disk(s), %d NIC(s))", d.MachineName, d.VMNamespace, vm.Name, plan.CPU, plan.MemoryGiB, len(plan.Disks), len(plan.NICs))
	var created *kubevirtv1.VirtualMachine
	if err := api.call(ctx, func(c context.Context) error {
		var err error
		created, err = api.virt.KubevirtV1().VirtualMachines(d.VMNamespace).Create(c, vm, metav1.CreateOptions{})
		return err
	}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create VM: a VM named %s already exists in namespace %s", vm.Name, d.VMNamespace)
		}
		return apiError("create VM "+vm.Name, err)
	}
	claims := make([]string, 0, len(plan.Disks))
	for _, disk := range plan.Disks {
		claims = append(claims, disk.ClaimName)
	}
	cleanups = append(cleanups, func(c context.Context) error {
		return d.removeVM(c, api, removeOptions{extraClaims: claims})
	})

	if err := d.adoptSecret(ctx, api, secret.Name, created); err != nil {
		return err
	}
	if err := d.waitVMI(ctx, api, "to run and report an address", runningWithAddress); err != nil {
		return err
	}
	ip, err := d.GetIP()
	if err != nil {
		return err
	}
	d.IPAddress = ip
	log.Infof("%s: running, address %s", d.MachineName, ip)
	return nil
}

// adoptSecret makes the VM the owner of the cloud-init Secret, so the
// Secret goes away with the VM even if the driver is not asked to remove it.
func (d *Driver) adoptSecret(ctx context.Context, api *harvesterAPI, name string, vm *kubevirtv1.VirtualMachine) error {
	secrets := api.kube.CoreV1().Secrets(d.VMNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return api.call(ctx, func(c context.Context) error {
			s, err := secrets.Get(c, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			s.OwnerReferences = append(s.OwnerReferences, VMOwnerReference(vm))
			_, err = secrets.Update(c, s, metav1.UpdateOptions{})
			return err
		})
	})
	return apiError("set the owner of Secret "+name, err)
}

// deleteSecret deletes the machine's cloud-init Secret if it carries the
// driver's label; NotFound is success.
func (d *Driver) deleteSecret(ctx context.Context, api *harvesterAPI, name string) error {
	secrets := api.kube.CoreV1().Secrets(d.VMNamespace)
	var s *corev1.Secret
	err := api.call(ctx, func(c context.Context) error {
		var err error
		s, err = secrets.Get(c, name, metav1.GetOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return apiError("get Secret "+name, err)
	}
	if s.Labels[LabelCreator] != CreatorValue {
		log.Warnf("Secret %s/%s is not labelled %s=%s; leaving it", d.VMNamespace, name, LabelCreator, CreatorValue)
		return nil
	}
	err = api.call(ctx, func(c context.Context) error {
		return secrets.Delete(c, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return apiError("delete Secret "+name, err)
}
