package machine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// Ownership is what the driver records, in the machine's persisted state
// (rancher-machine's config.json), about what the machine made and where.
// Every command that changes something acts only on objects carrying
// MachineID (and, for the VM, VMUID once recorded), and only after the
// credential's cluster is confirmed to be ClusterUID's.
type Ownership struct {
	// MachineID is random, generated when the machine is configured
	// (before pre-create checks and before anything is created), and set as
	// label harvester.LabelMachineID on every object the machine creates.
	MachineID string
	// VMUID is the UID of the VM the machine created.
	VMUID string
	// ClusterUID is the metadata.uid of Harvester's cluster-scoped Setting
	// server-version on the cluster the machine was created on.
	ClusterUID string
	// NamespaceUID is the metadata.uid of the VM namespace on that cluster,
	// recorded too because a credential confined to the namespace may not
	// read settings.
	NamespaceUID string
}

// ErrNotOwned is returned (wrapped) when an object of the machine's name
// exists but was not created by this machine; it is left untouched.
var ErrNotOwned = errors.New("it was not created by this machine, so the driver left it untouched")

// ErrWrongCluster is returned (wrapped) when the credential points at
// another Harvester cluster than the one the machine was created on.
var ErrWrongCluster = errors.New("the credential points at a different Harvester cluster than the one this machine was created on")

// NewMachineID returns 16 random bytes in hex (a valid label value).
func NewMachineID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate machine ID: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Legacy reports whether the machine was created by a driver version that
// recorded no ownership: then objects count as its own when they carry the
// creator label and the machine's name label.
func (o Ownership) Legacy() bool { return o.MachineID == "" }

// OwnsLabels reports whether labels mark an object as this machine's, and
// if not, says what the labels show instead.
func (o Ownership) OwnsLabels(machineName string, labels map[string]string) (bool, string) {
	if o.Legacy() {
		if labels[harvester.LabelCreator] == harvester.CreatorValue && labels[harvester.LabelVMName] == harvester.LabelValue(machineName) {
			return true, ""
		}
		return false, fmt.Sprintf("it lacks the labels %s=%s and %s=%s", harvester.LabelCreator, harvester.CreatorValue, harvester.LabelVMName, harvester.LabelValue(machineName))
	}
	switch got := labels[harvester.LabelMachineID]; got {
	case o.MachineID:
		return true, ""
	case "":
		return false, fmt.Sprintf("it has no %s label (this machine's is %s)", harvester.LabelMachineID, o.MachineID)
	default:
		return false, fmt.Sprintf("it carries %s=%s, another machine's (this machine's is %s)", harvester.LabelMachineID, got, o.MachineID)
	}
}

// CheckOwned returns nil when obj is this machine's; otherwise an error
// naming the object, what was found and why it was not touched.
func (o Ownership) CheckOwned(kind, machineName string, obj metav1.Object) error {
	ok, why := o.OwnsLabels(machineName, obj.GetLabels())
	if ok && kind == "VM" && o.VMUID != "" && string(obj.GetUID()) != o.VMUID {
		ok, why = false, fmt.Sprintf("its UID is %s but this machine created the VM with UID %s (the VM was replaced)", obj.GetUID(), o.VMUID)
	}
	if ok {
		return nil
	}
	return fmt.Errorf("%s %s/%s exists but %s: %w", kind, obj.GetNamespace(), obj.GetName(), why, ErrNotOwned)
}

// OwnerSelector selects the machine's objects by label.
func (o Ownership) OwnerSelector(machineName string) string {
	if o.Legacy() {
		return harvester.LabelCreator + "=" + harvester.CreatorValue + "," + harvester.LabelVMName + "=" + harvester.LabelValue(machineName)
	}
	return harvester.LabelMachineID + "=" + o.MachineID
}

// VMOwnerReference makes a VM the controller owner of another object.
func VMOwnerReference(vm *kubevirtv1.VirtualMachine) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{
		APIVersion: kubevirtv1.GroupVersion.String(), Kind: "VirtualMachine",
		Name: vm.Name, UID: vm.UID, Controller: &yes,
	}
}
