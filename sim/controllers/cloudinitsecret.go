package controllers

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// mountRetry is how soon a VMI held for a missing cloud-init Secret is
// looked at again (kubelet retries a failed volume mount with a backoff
// that starts at half a second).
const mountRetry = 2 * time.Second

// cloudInitSecrets lists the Secrets a VMI's cloud-init volumes refer to
// (user data and network data, NoCloud and ConfigDrive), sorted. KubeVirt's
// virt-controller renders each as a Secret volume of the virt-launcher pod
// (services/rendervolumes.go), not optional: kubelet cannot start the pod
// while one is missing, so the VMI stays in Scheduling until it exists.
func cloudInitSecrets(spec *kubevirtv1.VirtualMachineInstanceSpec) []string {
	var names []string
	add := func(refs ...*corev1.LocalObjectReference) {
		for _, r := range refs {
			if r != nil && !slices.Contains(names, r.Name) {
				names = append(names, r.Name)
			}
		}
	}
	for _, v := range spec.Volumes {
		if nc := v.CloudInitNoCloud; nc != nil {
			add(nc.UserDataSecretRef, nc.NetworkDataSecretRef)
		}
		if cd := v.CloudInitConfigDrive; cd != nil {
			add(cd.UserDataSecretRef, cd.NetworkDataSecretRef)
		}
	}
	slices.Sort(names)
	return names
}

// missingCloudInitSecret is why the VMI's launcher pod cannot start, in
// kubelet's words ("" when every cloud-init Secret exists).
func (s *sim) missingCloudInitSecret(c *vmiContext) string {
	secrets := s.kubeInformers.Core().V1().Secrets().Lister().Secrets(c.u.GetNamespace())
	for _, name := range cloudInitSecrets(&c.vmi.Spec) {
		if _, err := secrets.Get(name); err != nil {
			return fmt.Sprintf("MountVolume.SetUp failed: secret %q not found", name)
		}
	}
	return ""
}
