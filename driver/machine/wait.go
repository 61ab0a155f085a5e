package machine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// Goal decides, from the current VMI (nil when there is none), whether
// the wait is over.
type Goal func(vmi *kubevirtv1.VirtualMachineInstance) bool

func (m *Machine) WaitTimeout() time.Duration {
	if m.Config.WaitTimeoutSeconds <= 0 {
		return config.DefaultWaitTimeoutSeconds * time.Second
	}
	return time.Duration(m.Config.WaitTimeoutSeconds) * time.Second
}

// WaitVMI watches the machine's VMI until goal is met, logging progress,
// and returns the VMI that met it (the process remembers it: GetIP and
// GetState answer from it). With fromRV (the resource version of the
// VM's creation) it watches only the changes since, in one request;
// otherwise (or when that watch cannot go on) it lists and watches. On
// timeout it reports what was last seen. The wait ends at once, with
// ErrVMDeleted, when the machine's VM is deleted.
func (m *Machine) WaitVMI(parent context.Context, api *harvesterapi.API, fromRV, what string, goal Goal) (*kubevirtv1.VirtualMachineInstance, error) {
	return m.waitVMI(parent, api, fromRV, what, goal, nil)
}

// WaitRunning is WaitVMI for a goal that needs the VM to run, which the
// driver set running in the VM's generation runsFrom: the wait also ends
// at once, with a cause wrapping ErrVMHalted, when the VM is halted for
// good in that generation or a later one (haltedForGood), as Harvester
// halts a VM whose launcher pod a quota refused.
func (m *Machine) WaitRunning(parent context.Context, api *harvesterapi.API, fromRV string, runsFrom int64, what string, goal Goal) (*kubevirtv1.VirtualMachineInstance, error) {
	return m.waitVMI(parent, api, fromRV, what, goal, func(vm *kubevirtv1.VirtualMachine) error { return haltedForGood(vm, runsFrom) })
}

// waitVMI is WaitVMI, and with halted (not nil) WaitRunning: halted says
// why the VM will not run (nil: it may).
func (m *Machine) waitVMI(parent context.Context, api *harvesterapi.API, fromRV, what string, goal Goal, halted func(*kubevirtv1.VirtualMachine) error) (*kubevirtv1.VirtualMachineInstance, error) {
	timed, cancelTimeout := context.WithTimeout(parent, m.WaitTimeout())
	defer cancelTimeout()
	ctx, stop := m.whileVMMayRun(timed, api, fromRV, halted)
	defer stop()
	ns, name := m.Config.VMNamespace, m.Name
	vmis := api.VMIs(ns)
	p := &progress{machine: name}
	check := func(vmi *kubevirtv1.VirtualMachineInstance) (bool, error) {
		p.observe(vmi)
		return goal(vmi), nil
	}
	var met *kubevirtv1.VirtualMachineInstance
	err := kubeapi.ErrWatchEnded
	if fromRV != "" {
		k := vmis
		if held := api.Seen().TakeVMIStream(ns, name); held != nil {
			k = held.Resume(vmis) // the pre-create check's read of the VMI
		}
		met, err = kubeapi.WaitFrom(ctx, k, name, fromRV, check)
	}
	if errors.Is(err, kubeapi.ErrWatchEnded) && ctx.Err() == nil {
		met, err = m.listAndWatchVMI(ctx, api, vmis, p, goal)
	}
	if err == nil {
		api.Seen().RememberVMI(met)
		return met, nil
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, ErrVMHalted):
		return nil, fmt.Errorf("VM %s/%s %w, while waiting for it %s; last seen: %s", ns, name, cause, what, DescribeVMI(p.last))
	case errors.Is(cause, ErrVMDeleted) || errors.Is(cause, ErrSecretDeleted) || errors.Is(cause, ErrInputChanged):
		return nil, fmt.Errorf("VM %s/%s: %w while waiting for it %s; last seen: %s", ns, name, cause, what, DescribeVMI(p.last))
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, watchtools.ErrWatchClosed) || ctx.Err() != nil {
		return nil, m.timeoutError(parent, api, what, p.last)
	}
	return nil, api.Explain("watch VMI "+ns+"/"+name, err)
}

// listAndWatchVMI waits for goal from the VMI's current state on.
func (m *Machine) listAndWatchVMI(ctx context.Context, api *harvesterapi.API, vmis kubeapi.Kind, p *progress, goal Goal) (*kubevirtv1.VirtualMachineInstance, error) {
	ns, name := m.Config.VMNamespace, m.Name
	var met *kubevirtv1.VirtualMachineInstance
	// The precondition sees the informer's store, which may be newer than
	// the events still queued: it checks the goal without logging, so the
	// progress lines follow the events in order.
	precondition := func(store cache.Store) (bool, error) {
		obj, exists, err := store.GetByKey(ns + "/" + name)
		if err != nil {
			return false, err
		}
		var vmi *kubevirtv1.VirtualMachineInstance
		if exists {
			vmi = obj.(*kubevirtv1.VirtualMachineInstance)
		}
		p.last, met = vmi, vmi
		return goal(vmi), nil
	}
	_, err := watchtools.UntilWithSync(ctx, kubeapi.NamedListWatch(vmis, name, api.Timeout()), &kubevirtv1.VirtualMachineInstance{}, precondition, func(ev watch.Event) (bool, error) {
		vmi, ok := ev.Object.(*kubevirtv1.VirtualMachineInstance)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			vmi = nil
		}
		p.observe(vmi)
		met = vmi
		return goal(vmi), nil
	})
	return met, err
}

// ErrVMDeleted is the cause of a wait that ended because the machine's VM
// was deleted (or replaced by another VM of its name) by someone else.
var ErrVMDeleted = errors.New("the VM was deleted by someone else")

// whileVMMayRun returns a context that is cancelled, with cause
// ErrVMDeleted, as soon as a watch sees the machine's VM (of the recorded
// UID, if any) deleted, being deleted or replaced, or, with the error
// halted returns (halted not nil), halted. With fromRV it watches the
// changes after that resource version only (one request); the VMs it sees
// are remembered for GetState.
func (m *Machine) whileVMMayRun(parent context.Context, api *harvesterapi.API, fromRV string, halted func(*kubevirtv1.VirtualMachine) error) (context.Context, context.CancelFunc) {
	return whileNoCause(parent, api, api.VMs(m.Config.VMNamespace), m.Config.VMNamespace, m.Name, fromRV, func(vm *kubevirtv1.VirtualMachine) error {
		if vm == nil || vm.DeletionTimestamp != nil || (m.Ownership.VMUID != "" && string(vm.UID) != m.Ownership.VMUID) {
			return ErrVMDeleted
		}
		api.Seen().RememberVM(vm)
		if halted != nil {
			return halted(vm)
		}
		return nil
	})
}

// ErrSecretDeleted is the cause of a create's wait that ended because the
// machine's cloud-init Secret was deleted: KubeVirt mounts that Secret into
// the VM's launcher pod (virt-controller's volume renderer), and the pod
// cannot start without it, so the VM instance would stay in Scheduling.
var ErrSecretDeleted = errors.New("KubeVirt cannot start the VM without it")

// ErrInputChanged is the cause of a create's wait that ended because an
// image, a network or the key pair the machine is built from changed so
// that the VM could not start (deleted, no longer imported or validated):
// the create's guard (driver/create) names the change.
var ErrInputChanged = errors.New("it changed after the create had begun; what the create made is removed")

// SecretWatchDelay is how long a create lets its VM instance take to get
// past Scheduling before it watches the cloud-init Secret (the delay
// Create passes to WhileSecretNeeded). Once the instance is Scheduled its
// launcher pod has mounted the Secret, which no longer matters to it, so
// a create whose instance starts in time (the usual case) spends no
// request on the Secret.
const SecretWatchDelay = 5 * time.Second

// WhileSecretNeeded returns a context that is cancelled, with a cause
// wrapping ErrSecretDeleted and naming the Secret, when the machine's
// cloud-init Secret name (of uid) is deleted, being deleted or replaced
// before the VM instance got past Scheduling; and guard, which wraps the
// wait's goal to tell it when the instance did. The Secret is watched only
// if the instance is not past Scheduling after delay; the watch starts at
// fromRV, the Secret's resource version as created, so a deletion before
// it started is seen too.
func (m *Machine) WhileSecretNeeded(parent context.Context, api *harvesterapi.API, name string, uid types.UID, fromRV string,
	delay time.Duration) (ctx context.Context, guard func(Goal) Goal, stop context.CancelFunc) {
	mounted := make(chan struct{})
	var once sync.Once
	guard = func(goal Goal) Goal {
		return func(vmi *kubevirtv1.VirtualMachineInstance) bool {
			if PastScheduling(vmi) {
				once.Do(func() { close(mounted) })
			}
			return goal(vmi)
		}
	}
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		select {
		case <-mounted:
			return
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		watchCtx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go func() {
			select {
			case <-mounted:
				stopWatch()
			case <-watchCtx.Done():
			}
		}()
		gone := waitGone(watchCtx, api, api.Secrets(m.Config.VMNamespace), m.Config.VMNamespace, name, fromRV, func(s *corev1.Secret) bool {
			if s != nil && s.DeletionTimestamp == nil && s.UID == uid {
				return true
			}
			// The rollback's wait for the Secret's deletion could not see it.
			api.Seen().SawDeleted(harvesterapi.KindSecret, m.Config.VMNamespace, name)
			return false
		})
		if gone {
			cancel(m.SecretDeleted(name))
		}
	}()
	return ctx, guard, func() { cancel(context.Canceled) }
}

// PastScheduling: the VM instance's launcher pod runs (phase Scheduled or
// Running), so it has mounted its volumes.
func PastScheduling(vmi *kubevirtv1.VirtualMachineInstance) bool {
	return vmi != nil && vmi.DeletionTimestamp == nil && (vmi.Status.Phase == kubevirtv1.Scheduled || vmi.Status.Phase == kubevirtv1.Running)
}

// SecretDeleted is the error of a create whose cloud-init Secret name was
// deleted by someone else.
func (m *Machine) SecretDeleted(name string) error {
	return fmt.Errorf("its cloud-init Secret %s/%s was deleted by someone else (%w)", m.Config.VMNamespace, name, ErrSecretDeleted)
}

// whileNoCause returns a context that is cancelled, with the error cause
// returns, as soon as a watch of the object ns/name of kind k sees cause
// return one (cause gets nil for an object that does not exist).
func whileNoCause[T runtime.Object](parent context.Context, api *harvesterapi.API, k kubeapi.Kind, ns, name, fromRV string, cause func(T) error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		var why error
		if waitGone(ctx, api, k, ns, name, fromRV, func(obj T) bool { why = cause(obj); return why == nil }) {
			cancel(why)
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// waitGone watches the object ns/name of kind k until it is no longer
// there (exists is false; it gets nil for an object that does not exist),
// and reports whether it saw that before ctx ended. With fromRV it
// watches the changes after that resource version (one request), else (or
// when that watch cannot go on) it lists and watches.
func waitGone[T runtime.Object](ctx context.Context, api *harvesterapi.API, k kubeapi.Kind, ns, name, fromRV string, exists func(T) bool) bool {
	gone := func(obj T) (bool, error) { return !exists(obj), nil }
	err := kubeapi.ErrWatchEnded
	if fromRV != "" {
		_, err = kubeapi.WaitFrom(ctx, k, name, fromRV, gone)
	}
	if errors.Is(err, kubeapi.ErrWatchEnded) && ctx.Err() == nil {
		_, err = kubeapi.Wait(ctx, k, ns, name, api.Timeout(), gone)
	}
	return err == nil
}

// progress logs one line for each change worth telling.
type progress struct {
	machine  string
	last     *kubevirtv1.VirtualMachineInstance
	lastLine string
}

func (p *progress) observe(vmi *kubevirtv1.VirtualMachineInstance) {
	p.last = vmi
	line := DescribeVMI(vmi)
	if line != p.lastLine {
		log.Infof("%s: %s", p.machine, line)
		p.lastLine = line
	}
}

// DescribeVMI is a one-line summary of a VMI for progress lines.
func DescribeVMI(vmi *kubevirtv1.VirtualMachineInstance) string {
	if vmi == nil {
		return "no VM instance"
	}
	if vmi.DeletionTimestamp != nil {
		return "VM instance stopping"
	}
	parts := []string{"phase " + phaseName(vmi.Status.Phase)}
	if vmi.Status.NodeName != "" {
		host := "on host " + vmi.Status.NodeName
		if z := vmi.Annotations[corev1.LabelTopologyZone]; z != "" {
			host += " (zone " + z + ")"
		}
		parts = append(parts, host)
	}
	if addr, ok := SelectAddress(vmi.Status.Interfaces); ok {
		parts = append(parts, "address "+addr)
	} else if vmi.Status.Phase == kubevirtv1.Running {
		parts = append(parts, "waiting for the guest to report an address")
	}
	return strings.Join(parts, ", ")
}

func phaseName(p kubevirtv1.VirtualMachineInstancePhase) string {
	if p == "" {
		return "Pending"
	}
	return string(p)
}

// timeoutError says what was last seen: phase, conditions, recent events and
// a hint about the guest agent when the VMI runs without an address.
func (m *Machine) timeoutError(parent context.Context, api *harvesterapi.API, what string, last *kubevirtv1.VirtualMachineInstance) error {
	var b strings.Builder
	fmt.Fprintf(&b, "timed out after %s waiting for VM %s/%s %s; last seen: %s", m.WaitTimeout(), m.Config.VMNamespace, m.Name, what, DescribeVMI(last))
	if last != nil {
		var conds []string
		for _, c := range causesFirst(last.Status.Conditions) {
			s := fmt.Sprintf("%s=%s", c.Type, c.Status)
			if c.Reason != "" || c.Message != "" {
				s += " (" + strings.TrimSpace(c.Reason+" "+c.Message) + ")"
			}
			conds = append(conds, s)
		}
		if len(conds) > 0 {
			fmt.Fprintf(&b, "; conditions: %s", strings.Join(conds, ", "))
		}
		if last.Status.Phase == kubevirtv1.Running {
			if _, ok := SelectAddress(last.Status.Interfaces); !ok {
				b.WriteString("; no IP: the guest reports none - does the image run qemu-guest-agent? " +
					"(cloud-init installs it unless --" + config.FlagSkipQemuGuestAgent + " is set; air-gapped images must ship it)")
			}
		}
	}
	if ev := m.recentEvents(parent, api, last, 5); len(ev) > 0 {
		fmt.Fprintf(&b, "; recent events: %s", strings.Join(ev, " | "))
	}
	return errors.New(b.String())
}

// causesFirst orders a VMI's conditions for a reader: Ready, the summary,
// after the others (KubeVirt lists it first; under it, PodScheduled False
// is why a VMI stays in Scheduling).
func causesFirst(conds []kubevirtv1.VirtualMachineInstanceCondition) []kubevirtv1.VirtualMachineInstanceCondition {
	out := make([]kubevirtv1.VirtualMachineInstanceCondition, 0, len(conds))
	var ready []kubevirtv1.VirtualMachineInstanceCondition
	for _, c := range conds {
		if c.Type == kubevirtv1.VirtualMachineInstanceReady {
			ready = append(ready, c)
			continue
		}
		out = append(out, c)
	}
	return append(out, ready...)
}

// recentEvents returns the last n events about the machine's VM, VMI
// and the VMI's launcher Pods (status.activePods): KubeVirt reports on the
// VMI only a Pod's PodScheduled condition, the scheduler's
// FailedScheduling and kubelet's events are the Pod's.
func (m *Machine) recentEvents(parent context.Context, api *harvesterapi.API, last *kubevirtv1.VirtualMachineInstance, n int) []string {
	items, err := api.ListEvents(parent, m.Config.VMNamespace, m.Name)
	if err != nil {
		return nil
	}
	if last != nil {
		for uid := range last.Status.ActivePods {
			if pod, err := api.ListEventsOfUID(parent, m.Config.VMNamespace, uid); err == nil {
				items = append(items, pod...)
			}
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return eventTime(items[i]).Before(eventTime(items[j])) })
	if len(items) > n {
		items = items[len(items)-n:]
	}
	var out []string
	for _, e := range items {
		out = append(out, fmt.Sprintf("%s %s %s: %s", e.Type, e.InvolvedObject.Kind, e.Reason, e.Message))
	}
	return out
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// Goals.
func RunningWithAddress(vmi *kubevirtv1.VirtualMachineInstance) bool {
	if vmi == nil || vmi.DeletionTimestamp != nil || vmi.Status.Phase != kubevirtv1.Running {
		return false
	}
	_, ok := SelectAddress(vmi.Status.Interfaces)
	return ok
}

func NoVMI(vmi *kubevirtv1.VirtualMachineInstance) bool { return vmi == nil }

func NewRunningVMI(oldUID string) Goal {
	return func(vmi *kubevirtv1.VirtualMachineInstance) bool {
		return vmi != nil && string(vmi.UID) != oldUID && RunningWithAddress(vmi)
	}
}
