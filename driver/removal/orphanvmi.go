package removal

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// A VM deleted with `kubectl delete vm --cascade=orphan` leaves its VM
// instance (VMI) running: the garbage collector only removes the VM from
// the VMI's owner references. The VMI keeps the machine's name (so no new
// VM of that name can run) and the labels of the VM's template, the
// machine's own among them.

// orphanedVMI returns the VMI of the machine's name when it is provably
// the machine's and its VM is gone: it carries the machine's ID and is
// controlled by no VM but the machine's own (recorded UID). Another
// VMI of the name is left alone (nil), and logged.
func orphanedVMI(ctx context.Context, api *harvesterapi.API, m *machine.Machine) (*kubevirtv1.VirtualMachineInstance, error) {
	vmi, err := api.GetVMI(ctx, m.Config.VMNamespace, m.Name)
	vmi, err = harvesterapi.Absent(m.Name, vmi, err)
	if err != nil || vmi == nil {
		return nil, err
	}
	owned, why := m.Ownership.OwnsLabels(m.Name, vmi.Labels)
	if owned && m.Ownership.Legacy() {
		owned, why = false, "this machine recorded no ID to prove it is its own"
	}
	if c := metav1.GetControllerOf(vmi); owned && c != nil && (m.Ownership.VMUID == "" || string(c.UID) != m.Ownership.VMUID) {
		owned, why = false, fmt.Sprintf("it is controlled by VM UID %s, not by this machine's VM", c.UID)
	}
	if !owned {
		log.Infof("%s: keeping VM instance %s/%s: %s", m.Name, m.Config.VMNamespace, vmi.Name, why)
		return nil, nil
	}
	return vmi, nil
}
