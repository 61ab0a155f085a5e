package driver

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"

	"github.com/rancher/machine/libmachine/log"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

type removeOptions struct {
	// extraClaims are PVCs to delete even if the VM is already gone.
	extraClaims []string
}

// Remove deletes the machine's VM, its non-hotplug volumes (all of the
// guest cluster's volumes when the VM is annotated
// harvesterhci.io/removeAllPersistentVolumeClaims=true) and its cloud-init
// Secret, and waits until they are gone. A machine already gone is success.
func (d *Driver) Remove() error {
	api, err := d.client()
	if err != nil {
		return err
	}
	log.Infof("%s: removing VM %s/%s", d.MachineName, d.VMNamespace, d.MachineName)
	return d.removeVM(context.Background(), api, removeOptions{})
}

func (d *Driver) removeVM(ctx context.Context, api *harvesterAPI, opts removeOptions) error {
	ctx, cancel := context.WithTimeout(ctx, d.waitTimeout())
	defer cancel()
	vms := api.virt.KubevirtV1().VirtualMachines(d.VMNamespace)
	var vm *kubevirtv1.VirtualMachine
	err := api.call(ctx, func(c context.Context) error {
		var err error
		vm, err = vms.Get(c, d.MachineName, metav1.GetOptions{})
		return err
	})
	switch {
	case apierrors.IsNotFound(err):
		vm = nil
	case err != nil:
		return apiError("get VM "+d.MachineName, err)
	}

	claims := map[string]bool{}
	for _, c := range opts.extraClaims {
		claims[c] = true
	}
	secretName := UserDataSecretName(d.MachineName)
	if vm != nil {
		for _, c := range ClaimsToRemove(vm) {
			claims[c] = true
		}
		if s := userDataSecretOf(vm); s != "" {
			secretName = s
		}
		if vm.Annotations[AnnotationRemoveAllPVCs] == "true" && vm.Labels[LabelGuestCluster] != "" {
			all, err := d.guestClusterClaims(ctx, api, vm.Labels[LabelGuestCluster])
			if err != nil {
				return err
			}
			for _, c := range all {
				claims[c] = true
			}
		}
		names := sortedKeys(claims)
		if err := d.markClaimsForRemoval(ctx, api, names); err != nil {
			return err
		}
		log.Infof("%s: deleting VM (volumes: %s)", d.MachineName, strings.Join(names, ", "))
		err := api.call(ctx, func(c context.Context) error {
			return vms.Delete(c, d.MachineName, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &vm.UID}})
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return apiError("delete VM "+d.MachineName, err)
		}
	}

	var errs []error
	pvcs := api.kube.CoreV1().PersistentVolumeClaims(d.VMNamespace)
	for _, c := range sortedKeys(claims) {
		err := api.call(ctx, func(cc context.Context) error {
			return pvcs.Delete(cc, c, metav1.DeleteOptions{})
		})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, apiError("delete volume "+c, err))
		}
	}
	if err := d.deleteSecret(ctx, api, secretName); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return d.waitRemoved(ctx, api, secretName, sortedKeys(claims))
}

// ClaimsToRemove lists the PVCs of a VM's non-hotplug volumes: hot-plugged
// (CSI) volumes belong to the guest cluster and survive a node delete.
func ClaimsToRemove(vm *kubevirtv1.VirtualMachine) []string {
	if vm.Spec.Template == nil {
		return nil
	}
	var out []string
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if pvc := v.PersistentVolumeClaim; pvc != nil && !pvc.Hotpluggable && pvc.ClaimName != "" {
			out = append(out, pvc.ClaimName)
		}
	}
	if tmpl := vm.Annotations[AnnotationVolumeClaimTemplates]; tmpl != "" {
		var claims []corev1.PersistentVolumeClaim
		if json.Unmarshal([]byte(tmpl), &claims) == nil {
			hot := map[string]bool{}
			for _, v := range vm.Spec.Template.Spec.Volumes {
				if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.Hotpluggable {
					hot[v.PersistentVolumeClaim.ClaimName] = true
				}
			}
			for _, c := range claims {
				if !hot[c.Name] && !contains(out, c.Name) {
					out = append(out, c.Name)
				}
			}
		}
	}
	return out
}

func userDataSecretOf(vm *kubevirtv1.VirtualMachine) string {
	if vm.Spec.Template == nil {
		return ""
	}
	for _, v := range vm.Spec.Template.Spec.Volumes {
		if nc := v.CloudInitNoCloud; nc != nil && nc.UserDataSecretRef != nil {
			return nc.UserDataSecretRef.Name
		}
	}
	return ""
}

func (d *Driver) guestClusterClaims(ctx context.Context, api *harvesterAPI, cluster string) ([]string, error) {
	var list *corev1.PersistentVolumeClaimList
	err := api.call(ctx, func(c context.Context) error {
		var err error
		list, err = api.kube.CoreV1().PersistentVolumeClaims(d.VMNamespace).List(c, metav1.ListOptions{
			LabelSelector: labels.SelectorFromSet(labels.Set{LabelGuestCluster: cluster}).String(),
		})
		return err
	})
	if err != nil {
		return nil, apiError("list volumes of guest cluster "+cluster, err)
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, p.Name)
	}
	return out, nil
}

// markClaimsForRemoval sets harvesterhci.io/removedPersistentVolumeClaims on
// the VM, retrying on conflicts.
func (d *Driver) markClaimsForRemoval(ctx context.Context, api *harvesterAPI, claims []string) error {
	vms := api.virt.KubevirtV1().VirtualMachines(d.VMNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return api.call(ctx, func(c context.Context) error {
			vm, err := vms.Get(c, d.MachineName, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if vm.Annotations == nil {
				vm.Annotations = map[string]string{}
			}
			vm.Annotations[AnnotationRemovedPVCs] = strings.Join(claims, ",")
			_, err = vms.Update(c, vm, metav1.UpdateOptions{})
			return err
		})
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return apiError("annotate VM "+d.MachineName+" with the volumes to remove", err)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
