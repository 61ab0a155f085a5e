package sim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/hv"
)

// Harvester v1.8.1's node actions and the handler that drains
// (pkg/api/node/formatter.go, pkg/controller/master/nodedrain).
const (
	actionEnableMaintenance  = "enableMaintenanceMode"
	actionDisableMaintenance = "disableMaintenanceMode"
	handlerNodeDrain         = "node-drain-controller"
)

// maintenanceInput is the action's input (MaintenanceModeInput: force is
// the string "true" or "false").
type maintenanceInput struct {
	Force string `json:"force"`
}

// EnterMaintenance calls Harvester's node action enableMaintenanceMode for
// host (force: its force option) and waits until Harvester's controllers
// have it completed. The action refuses at once what
// drainhelper.DrainPossible refuses (its answer is the error); the
// nodedrain controller refuses later by removing the request, and its
// message is only in Harvester's log, from which it is quoted. When ctx
// ends first the error names the VMIs left on the host; the report says
// what migrated, was shut down or blocks.
func EnterMaintenance(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, stateDir, host string, force bool) (HostReport, error) {
	rep := HostReport{Host: host}
	api, err := newHarvesterAPI(ctx, kube, stateDir)
	if err != nil {
		return rep, err
	}
	before, err := vmisOn(ctx, dyn, host)
	if err != nil {
		return rep, err
	}
	logged := markHarvesterLog(stateDir)
	err = api.nodeAction(ctx, host, actionEnableMaintenance, maintenanceInput{Force: strconv.FormatBool(force)})
	if refused := (*actionRefused)(nil); errors.As(err, &refused) {
		rep.Refused = refused.message
		return rep, fmt.Errorf("maintenance mode of %s refused: %s", host, refused.message)
	}
	if err != nil {
		return rep, err
	}
	refused, err := waitMaintenance(ctx, kube, host)
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	outcome(bg, dyn, host, before, &rep)
	switch {
	case refused:
		rep.Refused = orUnknown(logged.controllerError(bg, host, handlerNodeDrain))
		return rep, fmt.Errorf("maintenance mode of %s refused: %s", host, rep.Refused)
	case err != nil:
		rep.Blocked = blockers(bg, kube, dyn, host, drainWords(logged))
		return rep, fmt.Errorf("maintenance mode of %s not completed (%w); blocked by: %s", host, err, strings.Join(rep.Blocked, "; "))
	}
	return rep, nil
}

// waitMaintenance waits until the host's maintain-status is completed
// (false) or its request is gone without maintenance (true: refused). The
// action's update came before its answer, so the host as read now is the
// request's or later; kubeapi.Wait's first list is a consistent read, and
// no older read (which may still show an earlier request of the host, or
// that request's refusal) decides anything.
func waitMaintenance(ctx context.Context, kube kubernetes.Interface, host string) (bool, error) {
	n, err := kube.CoreV1().Nodes().Get(ctx, host, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("read host %s: %w", host, err)
	}
	requestRV, _ := strconv.ParseUint(n.ResourceVersion, 10, 64)
	nodes := kubeapi.KindOf("node", &corev1.Node{}, kube.CoreV1().Nodes())
	var refused bool
	_, err = kubeapi.Wait(ctx, nodes, "", host, 0, func(n *corev1.Node) (bool, error) {
		if n == nil {
			return false, fmt.Errorf("host %s is gone", host)
		}
		if cur, _ := strconv.ParseUint(n.ResourceVersion, 10, 64); cur < requestRV {
			return false, nil
		}
		_, requested := n.Annotations[hv.AnnDrainRequested]
		status, inMaintenance := n.Annotations[hv.AnnMaintainStatus]
		switch {
		case status == hv.MaintainCompleted:
			return true, nil
		case !inMaintenance && !requested:
			refused = true
			return true, nil
		}
		return false, nil
	})
	return refused, err
}

// DisableMaintenance calls Harvester's node action disableMaintenanceMode
// for host; its refusal or failure is the error, with Harvester's message.
func DisableMaintenance(ctx context.Context, kube kubernetes.Interface, stateDir, host string) error {
	api, err := newHarvesterAPI(ctx, kube, stateDir)
	if err != nil {
		return err
	}
	if err := api.nodeAction(ctx, host, actionDisableMaintenance, struct{}{}); err != nil {
		return fmt.Errorf("disable maintenance mode of %s: %w", host, err)
	}
	return nil
}

// drainWords says why a VMI is still on a host from what Harvester's
// drain (kubectl's drain helper, pkg/util/drainhelper) logged about its
// launcher pod since the request: the newest line naming the pod.
func drainWords(logged harvesterLog) func(pod string) string {
	return func(pod string) string {
		msgs := logged.messages(pod)
		if len(msgs) == 0 {
			return ""
		}
		m := msgs[len(msgs)-1]
		if strings.Contains(m, " is skipped because of the label ") {
			return "the drain skipped its pod (Harvester: " + m + "): it keeps running on the host"
		}
		return "Harvester's drain: " + m
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason recorded"
	}
	return s
}
