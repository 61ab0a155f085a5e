// Stand-in for Harvester's image controller, Harvester v1.8.1: an image's
// status once imported. It follows
// https://github.com/harvester/harvester/blob/v1.8.1/pkg/controller/master/image/vm_image_controller.go.

package controllers

import (
	"fmt"
	"strconv"
	"time"

	harvesterv1 "github.com/harvester/harvester/pkg/apis/harvesterhci.io/v1beta1"
	"github.com/rancher/wrangler/v3/pkg/condition"
	corev1 "k8s.io/api/core/v1"
)

// reasonInvalidSpec is the condition reason of an object whose spec does
// not decode into Harvester's types.
const reasonInvalidSpec = "InvalidSpec"

// AnnImportResult set to "fail" on a VirtualMachineImage makes the
// simulated import fail (for tests of the failure path).
const AnnImportResult = "sim.harvesterhci.io/import"

// AnnVirtualSize on a VirtualMachineImage sets the virtual size (bytes)
// the simulated import reports in status.virtualSize; without it an image
// reports DefaultVirtualSize. The simulator downloads nothing.
const AnnVirtualSize = "sim.harvesterhci.io/virtual-size"

// DefaultVirtualSize is the virtual size of the Ubuntu 22.04 cloud image
// (2.2 GiB), which every simulated image reports unless annotated.
const DefaultVirtualSize int64 = 2361393152

// LonghornProvisioner is the provisioner of image storage classes.
const LonghornProvisioner = "driver.longhorn.io"

// imageStorageClassName is the storage class Harvester creates per image.
func imageStorageClassName(imageName string) string {
	return "longhorn-" + imageName
}

// imageStatus computes a VirtualMachineImage status: imported at once with
// progress 100 and its storage class, or failed when the spec did not
// decode or the image carries the sim failure annotation.
func imageStatus(img *harvesterv1.VirtualMachineImage, decodeErr error, now time.Time) harvesterv1.VirtualMachineImageStatus {
	st := *img.Status.DeepCopy()
	stamp := now.UTC().Format(time.RFC3339)
	switch {
	case decodeErr != nil:
		st.Progress = 0
		st.Conditions = setHarvesterCondition(st.Conditions, harvesterv1.ImageImported, corev1.ConditionFalse,
			reasonInvalidSpec, "spec does not decode as harvesterhci.io/v1beta1 VirtualMachineImage: "+decodeErr.Error(), stamp)
	case img.Annotations[AnnImportResult] == "fail":
		st.Progress = 0
		st.Failed = 1
		before := len(st.Conditions)
		conds := setHarvesterCondition(st.Conditions, harvesterv1.ImageImported, corev1.ConditionFalse,
			"ImportFailed", fmt.Sprintf("simulated import failure (annotation %s: fail)", AnnImportResult), stamp)
		if len(conds) != before || !sameConditions(conds, st.Conditions) || st.LastFailedTime == "" {
			st.LastFailedTime = stamp
		}
		st.Conditions = conds
	default:
		st.Progress = 100
		st.Failed = 0
		st.LastFailedTime = ""
		st.AppliedURL = img.Spec.URL
		st.StorageClassName = imageStorageClassName(img.Name)
		st.VirtualSize = DefaultVirtualSize
		if v, err := strconv.ParseInt(img.Annotations[AnnVirtualSize], 10, 64); err == nil && v > 0 {
			st.VirtualSize = v
		}
		st.Conditions = setHarvesterCondition(st.Conditions, harvesterv1.ImageInitialized, corev1.ConditionTrue, "", "", stamp)
		st.Conditions = setHarvesterCondition(st.Conditions, harvesterv1.ImageImported, corev1.ConditionTrue, "", "", stamp)
	}
	return st
}

// imageImported reports whether an image's Imported condition is True.
func imageImported(img *harvesterv1.VirtualMachineImage) bool {
	for _, c := range img.Status.Conditions {
		if c.Type == harvesterv1.ImageImported {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setHarvesterCondition replaces or adds a condition; times change only
// when status, reason or message do.
func setHarvesterCondition(conds []harvesterv1.Condition, t condition.Cond, status corev1.ConditionStatus, reason, message, stamp string) []harvesterv1.Condition {
	c := harvesterv1.Condition{Type: t, Status: status, Reason: reason, Message: message, LastUpdateTime: stamp, LastTransitionTime: stamp}
	for i, old := range conds {
		if old.Type != t {
			continue
		}
		if old.Status == status && old.Reason == reason && old.Message == message {
			return conds
		}
		if old.Status == status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out := append([]harvesterv1.Condition(nil), conds...)
		out[i] = c
		return out
	}
	return append(append([]harvesterv1.Condition(nil), conds...), c)
}

func sameConditions(a, b []harvesterv1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
