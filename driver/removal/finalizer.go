package removal

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// releaseTries bounds the re-reads when the instance's finalizers change
// between the read and the patch (KubeVirt removes its own meanwhile).
const releaseTries = 5

// releaseBackfillFinalizer releases Harvester's finalizer
// harvester.FinalizerBackfillMAC, and only it, from the machine's orphaned
// VM instance just deleted (orphanedVMI proved it the machine's, Find that
// its VM is gone): the finalizer's handler copies the instance's MAC
// addresses onto the VM of its name and fails while that VM does not
// exist, so it would hold the instance for ever. The patch applies only to
// that UID and to the finalizer at the index read; when the list changed
// meanwhile it is read again. Gone counts as done; a refusal (an older
// credential without patch on VM instances) is finalizerHeldError.
func releaseBackfillFinalizer(ctx context.Context, api *harvesterapi.API, m *machine.Machine, vmi *kubevirtv1.VirtualMachineInstance) error {
	ns, name, uid := m.Config.VMNamespace, vmi.Name, vmi.UID
	for try := 1; ; try++ {
		patch, ok, err := finalizerPatch(uid, vmi.Finalizers, harvester.FinalizerBackfillMAC)
		if err != nil || !ok {
			return err
		}
		if try == 1 {
			log.Infof("%s: releasing Harvester's finalizer %s of VM instance %s/%s (UID %s): its handler copies the instance's MAC addresses onto its VM, which is gone, and would hold the instance for ever",
				m.Name, harvester.FinalizerBackfillMAC, ns, name, uid)
		}
		err = api.PatchVMIFinalizers(ctx, ns, name, patch)
		switch {
		case err == nil || harvesterapi.ObjectNotFound(err, name):
			return nil
		case apierrors.IsForbidden(err):
			return &finalizerHeldError{Namespace: ns, Name: name, UID: uid, Patch: patch, Err: err}
		case !listChanged(err) || try == releaseTries:
			return fmt.Errorf("release finalizer %s of VM instance %s/%s: %w", harvester.FinalizerBackfillMAC, ns, name, err)
		}
		vmi, err = api.GetVMI(ctx, ns, name)
		if vmi, err = harvesterapi.Absent(name, vmi, err); err != nil || vmi == nil || vmi.UID != uid {
			return err
		}
	}
}

// listChanged: the patch's test operations failed (422 Invalid, kube-apiserver's
// answer to a failed JSON-patch test) or the write conflicted: read again.
func listChanged(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsConflict(err)
}

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// finalizerPatch is the JSON patch that removes finalizer from an object
// of that UID whose finalizers are as given: its test operations make the
// API server refuse it (422 Invalid) on another object of the name, or
// when the finalizer no longer sits at that index. ok is false when the
// finalizer is not among them (nothing to do).
func finalizerPatch(uid types.UID, finalizers []string, finalizer string) (patch []byte, ok bool, err error) {
	i := slices.Index(finalizers, finalizer)
	if i < 0 {
		return nil, false, nil
	}
	path := "/metadata/finalizers/" + strconv.Itoa(i)
	patch, err = json.Marshal([]jsonPatchOp{
		{Op: "test", Path: "/metadata/uid", Value: uid},
		{Op: "test", Path: path, Value: finalizer},
		{Op: "remove", Path: path},
	})
	if err != nil {
		return nil, false, fmt.Errorf("encode patch: %w", err)
	}
	return patch, true, nil
}

// finalizerHeldError: the driver may not release Harvester's finalizer of
// the machine's orphaned VM instance, which therefore never goes.
type finalizerHeldError struct {
	Namespace, Name string
	UID             types.UID
	Patch           []byte // the patch the driver sent, for the admin's kubectl
	Err             error
}

func (e *finalizerHeldError) Error() string {
	return fmt.Sprintf("VM instance %s/%s (UID %s) is held by Harvester's finalizer %s: its handler copies the instance's MAC addresses onto VM %s/%s, which was deleted, so Harvester never releases it; "+
		"the driver may not release it (%v): a credential made by harvester-bootstrap driver-credential before it granted patch on virtualmachineinstances lacks that right (run driver-credential again), "+
		"or an admin releases the finalizer with: %s; then run rm again",
		e.Namespace, e.Name, e.UID, harvester.FinalizerBackfillMAC, e.Namespace, e.Name, e.Err, e.Kubectl())
}

func (e *finalizerHeldError) Unwrap() error { return e.Err }

// Kubectl is the command that releases the finalizer as the driver would
// have: the same patch, so only from that instance and only that finalizer.
func (e *finalizerHeldError) Kubectl() string {
	return fmt.Sprintf("kubectl -n %s patch vmi %s --type=json -p '%s'", e.Namespace, e.Name, e.Patch)
}
