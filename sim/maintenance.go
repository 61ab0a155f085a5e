package sim

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/controllers"
	"github.com/harvester-kit/harvester-machine/sim/hv"
)

const (
	flagForce   = "force"
	flagTimeout = "timeout"
)

func maintenanceCommand() *cli.Command {
	timeout := func() cli.Flag {
		return &cli.DurationFlag{Name: flagTimeout, Value: 5 * time.Minute, Usage: "give up (exit 1, naming what blocks) after this long"}
	}
	return &cli.Command{
		Name:  "maintenance",
		Usage: "put a host into Harvester's maintenance mode or take it out, as the node actions enableMaintenanceMode/disableMaintenanceMode do",
		Flags: []cli.Flag{stateDirFlag()},
		Subcommands: []*cli.Command{
			{
				Name: "enable", ArgsUsage: "HOST",
				Usage:  "request maintenance mode (annotation harvesterhci.io/drain-requested, as the node action does) and wait until harvesterhci.io/maintain-status is completed; exit 1 naming the VMs that block it and why",
				Flags:  []cli.Flag{stateDirFlag(), &cli.BoolFlag{Name: flagForce, Usage: "Harvester's force option: stop the VMs that cannot migrate"}, timeout()},
				Before: requireStateDir,
				Action: func(c *cli.Context) error {
					host, force, err := hostThenForce(c)
					if err != nil {
						return err
					}
					kube, dyn, err := simClients(c)
					if err != nil {
						return err
					}
					ctx, cancel := context.WithTimeout(c.Context, c.Duration(flagTimeout))
					defer cancel()
					rep, err := EnterMaintenance(ctx, kube, dyn, host, force || c.Bool(flagForce))
					rep.Print(c.App.Writer)
					if err != nil {
						return cli.Exit("harvester-sim: "+err.Error(), 1)
					}
					return nil
				},
			},
			{
				Name: "disable", ArgsUsage: "HOST",
				Usage:  "take the host out of maintenance mode: uncordon, remove the kubevirt.io/drain taint and the maintenance annotations, start the VMs Harvester restarts",
				Flags:  []cli.Flag{stateDirFlag()},
				Before: requireStateDir,
				Action: func(c *cli.Context) error {
					host, err := oneHost(c)
					if err != nil {
						return err
					}
					kube, dyn, err := simClients(c)
					if err != nil {
						return err
					}
					ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
					defer cancel()
					if err := controllers.DisableMaintenance(ctx, kube, dyn, host); err != nil {
						return err
					}
					_, err = fmt.Fprintf(c.App.Writer, "%s: maintenance mode disabled\n", host)
					return err
				},
			},
		},
	}
}

func oneHost(c *cli.Context) (string, error) {
	if c.NArg() != 1 {
		return "", fmt.Errorf("%s: give exactly one HOST (a Node name, e.g. harvester-node-0); got %d arguments", c.Command.Name, c.NArg())
	}
	return c.Args().First(), nil
}

// hostThenForce is `enable HOST`, also written `enable HOST --force`
// (the command line Harvester's docs use): urfave/cli stops reading flags
// at HOST, so a --force after it arrives as an argument. Any other
// argument after HOST is refused, saying that flags go before it.
func hostThenForce(c *cli.Context) (string, bool, error) {
	args := c.Args().Slice()
	if len(args) == 0 {
		return "", false, fmt.Errorf("%s: give exactly one HOST (a Node name, e.g. harvester-node-0); got none", c.Command.Name)
	}
	force := false
	for _, a := range args[1:] {
		switch a {
		case "--force", "-force", "--force=true":
			force = true
		default:
			return "", false, fmt.Errorf("%s: give exactly one HOST (a Node name, e.g. harvester-node-0); got %q after %s (flags other than --force go before HOST)", c.Command.Name, a, args[0])
		}
	}
	return args[0], force, nil
}

// HostReport is what happened to the VMs of one host.
type HostReport struct {
	Host     string
	Migrated []string // "ns/name -> host"
	ShutDown []string // "ns/name"
	Blocked  []string // "ns/name: why"
	Refused  string   // Harvester's refusal, when it refused
}

// Print writes the report.
func (r HostReport) Print(w io.Writer) {
	if r.Host == "" {
		return
	}
	_, _ = fmt.Fprintf(w, "host %s\n", r.Host)
	if r.Refused != "" {
		_, _ = fmt.Fprintf(w, "  refused: %s\n", r.Refused)
	}
	for _, group := range []struct {
		what string
		list []string
	}{{"migrated", r.Migrated}, {"shut down", r.ShutDown}, {"blocked", r.Blocked}} {
		for _, v := range group.list {
			_, _ = fmt.Fprintf(w, "  %-9s %s\n", group.what, v)
		}
	}
}

// vmiSnapshot is a VMI's place and phase.
type vmiSnapshot struct {
	UID   string
	Node  string
	Phase kubevirtv1.VirtualMachineInstancePhase
}

// vmisOn lists the VMIs labelled with the host, by namespace/name.
func vmisOn(ctx context.Context, dyn dynamic.Interface, host string) (map[string]vmiSnapshot, error) {
	list, err := dyn.Resource(vmiGVR).Namespace("").List(ctx, metav1.ListOptions{LabelSelector: controllers.LabelVMINodeName + "=" + host})
	if err != nil {
		return nil, fmt.Errorf("list vmis on %s: %w", host, err)
	}
	out := map[string]vmiSnapshot{}
	for _, u := range list.Items {
		var st kubevirtv1.VirtualMachineInstanceStatus
		if m, ok := u.Object["status"].(map[string]any); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st)
		}
		out[u.GetNamespace()+"/"+u.GetName()] = vmiSnapshot{UID: string(u.GetUID()), Node: st.NodeName, Phase: st.Phase}
	}
	return out, nil
}

// outcome reports where each VMI that was on host went.
func outcome(ctx context.Context, dyn dynamic.Interface, host string, before map[string]vmiSnapshot, rep *HostReport) {
	keys := make([]string, 0, len(before))
	for k := range before {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ns, name, _ := strings.Cut(k, "/")
		u, err := dyn.Resource(vmiGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || string(u.GetUID()) != before[k].UID {
			rep.ShutDown = append(rep.ShutDown, k)
			continue
		}
		var st kubevirtv1.VirtualMachineInstanceStatus
		if m, ok := u.Object["status"].(map[string]any); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st)
		}
		switch {
		case st.Phase == kubevirtv1.Succeeded || st.Phase == kubevirtv1.Failed || u.GetDeletionTimestamp() != nil:
			rep.ShutDown = append(rep.ShutDown, k)
		case st.NodeName != host:
			rep.Migrated = append(rep.Migrated, k+" -> "+st.NodeName)
		}
	}
}

// EnterMaintenance requests maintenance mode for host (force: Harvester's
// force option) and waits until it is completed. On refusal or when ctx
// ends first it returns an error naming what blocks; the report says what
// migrated, was shut down or blocks.
func EnterMaintenance(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, host string, force bool) (HostReport, error) {
	rep := HostReport{Host: host}
	before, err := vmisOn(ctx, dyn, host)
	if err != nil {
		return rep, err
	}
	started := time.Now().Add(-time.Second)
	rv, err := controllers.EnableMaintenance(ctx, kube, host, force)
	if err != nil {
		return rep, err
	}
	requestRV, _ := strconv.ParseUint(rv, 10, 64)
	nodes := kubeapi.KindOf("node", &corev1.Node{}, kube.CoreV1().Nodes())
	var refused bool
	// kube-apiserver's resourceVersions are etcd revisions: a read at or
	// after the request's is fresh. kubeapi.Wait's first list is a
	// consistent read already; this check keeps any older read (which may
	// still show an earlier request of the host, or that request's
	// refusal) from deciding anything, whatever serves it.
	_, err = kubeapi.Wait(ctx, nodes, "", host, 0, func(n *corev1.Node) (bool, error) {
		if n == nil {
			return false, fmt.Errorf("host %s is gone", host)
		}
		if cur, _ := strconv.ParseUint(n.ResourceVersion, 10, 64); cur < requestRV {
			return false, nil
		}
		ann := n.Annotations
		_, requested := ann[hv.AnnDrainRequested]
		status, inMaintenance := ann[hv.AnnMaintainStatus]
		switch {
		case status == hv.MaintainCompleted:
			return true, nil
		case !inMaintenance && !requested:
			refused = true
			return true, nil
		}
		return false, nil
	})
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	outcome(bg, dyn, host, before, &rep)
	switch {
	case refused:
		rep.Refused = latestNodeEvent(bg, kube, host, controllers.ReasonMaintenanceRefused, started)
		return rep, fmt.Errorf("maintenance mode of %s refused: %s", host, orUnknown(rep.Refused))
	case err != nil:
		rep.Blocked = blockers(bg, kube, dyn, host, started)
		return rep, fmt.Errorf("maintenance mode of %s not completed (%w); blocked by: %s", host, err, strings.Join(rep.Blocked, "; "))
	}
	return rep, nil
}

// blockers names the VMIs still running on the host, with the drain's
// latest word on each.
func blockers(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, host string, since time.Time) []string {
	left, _ := vmisOn(ctx, dyn, host)
	why := latestNodeEvent(ctx, kube, host, controllers.ReasonDrainWaiting, since)
	reasons := map[string]string{}
	if _, list, ok := strings.Cut(why, "waits for: "); ok {
		for _, part := range strings.Split(list, "; ") {
			if k, r, ok := strings.Cut(part, ": "); ok {
				reasons[k] = r
			}
		}
	}
	var out []string
	for k, v := range left {
		if v.Phase == kubevirtv1.Succeeded {
			continue
		}
		r := reasons[k]
		if r == "" {
			r = "still on the host (phase " + string(v.Phase) + ")"
		}
		out = append(out, k+": "+r)
	}
	sort.Strings(out)
	return out
}

// latestNodeEvent is the message of the newest event of reason about the
// host since a time, or "".
func latestNodeEvent(ctx context.Context, kube kubernetes.Interface, host, reason string, since time.Time) string {
	list, err := kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{
		FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + host + ",reason=" + reason})
	if err != nil {
		return ""
	}
	var best corev1.Event
	for _, e := range list.Items {
		if e.LastTimestamp.Time.Before(since) || (best.Message != "" && !newerEvent(&e, &best)) {
			continue
		}
		best = e
	}
	return best.Message
}

// newerEvent: a was created after b; within the same second (the
// timestamps' resolution) the later write, by resourceVersion (an etcd
// revision on kube-apiserver), decides.
func newerEvent(a, b *corev1.Event) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	ra, _ := strconv.ParseUint(a.ResourceVersion, 10, 64)
	rb, _ := strconv.ParseUint(b.ResourceVersion, 10, 64)
	return ra > rb
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason recorded"
	}
	return s
}
