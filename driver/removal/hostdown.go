package removal

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// A machine whose host died cannot be removed at once: its VM instance
// (VMI) cannot finish terminating without the host's kubelet and
// virt-handler. Harvester's node-down rule (setting
// vm-force-reset-policy) marks the host out of service after a while, and
// Kubernetes then force-deletes the instance's pod; only then is the VMI
// gone. A removal that times out meanwhile says so.

// diagnoseBudget bounds the reads that explain a timed-out removal: they
// run after the timeout, so they must not stretch it by much.
const diagnoseBudget = 3 * time.Second

// explainTimeout turns a removal that ran out of time because the
// machine's VMI sits on a host that is down into an error naming the host
// and Harvester's rule; any other error is returned as it is. It reads
// the VMI and its host (two requests, only after a timeout, within
// diagnoseBudget).
func explainTimeout(parent context.Context, api *harvesterapi.API, m *machine.Machine, err error) error {
	var explained *HostDown
	if errors.As(err, &explained) {
		return err // a nested removal explained it already
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), diagnoseBudget)
	defer cancel()
	vmi, gerr := api.GetVMI(ctx, m.Config.VMNamespace, m.Name)
	if gerr != nil || vmi == nil || vmi.Status.NodeName == "" {
		return err
	}
	node, gerr := api.GetHost(ctx, vmi.Status.NodeName)
	if gerr != nil {
		return err
	}
	if why := HostDownError(vmi, node, time.Now()); why != nil {
		why.Cause = err
		return why
	}
	return err
}

// HostDown is a removal stopped by a host that is down.
type HostDown struct {
	Explanation string
	Cause       error // the timeout
}

func (e *HostDown) Error() string {
	msg := e.Explanation + "; the machine is kept: run rm again once Harvester has released the instance"
	if e.Cause != nil {
		msg += " (" + e.Cause.Error() + ")"
	}
	return msg
}

func (e *HostDown) Unwrap() error { return e.Cause }

// HostDownError explains why vmi is not gone when its host node is not
// Ready (nil when the host is Ready, or not known): the host, since when
// it is NotReady, and where Harvester's force-reset rule stands, read from
// the Node's taints and Harvester's Drained condition.
func HostDownError(vmi *kubevirtv1.VirtualMachineInstance, node *corev1.Node, now time.Time) *HostDown {
	if node == nil {
		return nil
	}
	var ready *corev1.NodeCondition
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeReady {
			ready = &node.Status.Conditions[i]
		}
	}
	if ready == nil || ready.Status == corev1.ConditionTrue {
		return nil
	}
	state := "still on"
	if vmi.DeletionTimestamp != nil {
		state = "still terminating on"
	}
	since := ""
	if !ready.LastTransitionTime.IsZero() {
		since = fmt.Sprintf(" since %s (%s ago)", ready.LastTransitionTime.UTC().Format(time.RFC3339), now.Sub(ready.LastTransitionTime.Time).Round(time.Second))
	}
	host := fmt.Sprintf("VM %s/%s is %s host %s, which is NotReady%s (Ready %s: %s)",
		vmi.Namespace, vmi.Name, state, node.Name, since, ready.Status, firstNonEmpty(ready.Message, ready.Reason, "no reason given"))
	return &HostDown{Explanation: host + ": " + forceResetStage(node)}
}

// forceResetStage says where Harvester's vm-force-reset-policy rule
// stands for a NotReady host.
func forceResetStage(node *corev1.Node) string {
	var drainedAt time.Time
	for _, c := range node.Status.Conditions {
		if c.Type == harvester.NodeConditionDrained {
			drainedAt = c.LastTransitionTime.Time
		}
	}
	switch {
	case hasTaint(node, corev1.TaintNodeOutOfService):
		return fmt.Sprintf("Harvester has marked the host out of service (taint %s), so Kubernetes force-deletes the instance's pod (pod GC runs every 20 s) and the instance goes",
			corev1.TaintNodeOutOfService)
	case hasTaint(node, harvester.TaintKubevirtDrain):
		at := ""
		if !drainedAt.IsZero() {
			at = " (tainted at " + drainedAt.UTC().Format(time.RFC3339) + ")"
		}
		return fmt.Sprintf("Harvester force-resets it after the setting %s: the host has the taint %s%s and gets %s vmMigrationTimeout seconds later (default %s), which releases the instance",
			harvester.SettingVMForceResetPolicy, harvester.TaintKubevirtDrain, at, corev1.TaintNodeOutOfService, harvester.DefaultVMForceResetPolicy)
	default:
		return fmt.Sprintf("Harvester force-resets it after the setting %s: once the host has been Ready Unknown for its period it gets the taint %s, then vmMigrationTimeout seconds later %s, which releases the instance (default %s; with enable false never, and a host that reports Ready False is not force-reset)",
			harvester.SettingVMForceResetPolicy, harvester.TaintKubevirtDrain, corev1.TaintNodeOutOfService, harvester.DefaultVMForceResetPolicy)
	}
}

func hasTaint(node *corev1.Node, key string) bool {
	for _, t := range node.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
