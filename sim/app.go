package sim

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/fault"
	"github.com/harvester-kit/harvester-machine/sim/guestnet"
	"github.com/harvester-kit/harvester-machine/sim/kubevip"
	"github.com/harvester-kit/harvester-machine/sim/kubevirt"
)

// Flag names of bin/harvester-sim.
const (
	flagStateDir      = "state-dir"
	flagBinDir        = "bin-dir"
	flagHosts         = "hosts"
	flagZones         = "zones"
	flagScheduleDelay = "schedule-delay"
	flagBootDelay     = "boot-delay"
	flagIPDelay       = "ip-delay"
	flagMigrationDur  = "migration-duration"
	flagStartTimeout  = "start-timeout"
	flagRemove        = "remove"
	flagVerbose       = "verbose"
	flagDelay         = "delay"
	flagGuestClusters = "guest-clusters"
	flagAuditLog      = "audit-log"
	flagLedger        = "ledger"
	flagGuestIface    = guestnet.FlagInterface
	flagNodeGrace     = "node-monitor-grace-period"
)

const appDescription = `Runs a simulated Harvester in the foreground: a real etcd, kube-apiserver,
kube-controller-manager and kube-scheduler on free loopback ports, KubeVirt's virt-api and virt-controller,
Harvester's admission webhook (its Service listens on port 443: run as root or with CAP_NET_BIND_SERVICE)
and API server with its controllers,
the Harvester/KubeVirt CRDs, fixtures, and controllers that play the hosts and Harvester. It writes DIR/kubeconfig (admin) and, last, DIR/ready.
SIGTERM or SIGINT stops everything it started.

Every run starts clean: cluster data an earlier run left in DIR is removed first (a DIR that a
running simulator uses is refused).

Example:
   bin/harvester-sim --state-dir /tmp/hsim &
   until [ -f /tmp/hsim/ready ]; do sleep 0.2; done
   KUBECONFIG=/tmp/hsim/kubeconfig kubectl get vm,vmimage,keypair -A`

// NewApp is the harvester-sim command line.
func NewApp() *cli.App {
	return &cli.App{
		Name:        "harvester-sim",
		Usage:       "a simulated Harvester on a real kube-apiserver",
		Description: appDescription,
		Flags: []cli.Flag{
			stateDirFlag(),
			binDirFlag("etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubevirt-install, virt-api, virt-controller, harvester-webhook and harvester"),
			&cli.IntFlag{Name: flagHosts, Value: 3, Usage: "number of simulated Harvester hosts (harvester-node-0..N-1)"},
			&cli.IntFlag{Name: flagZones, Value: 2, Usage: "number of zones the hosts are spread over (sim-zone-a, sim-zone-b, ...)"},
			&cli.DurationFlag{Name: flagScheduleDelay, Value: 200 * time.Millisecond, Usage: "time a VMI spends Pending/Scheduling before it is Scheduled"},
			&cli.DurationFlag{Name: flagBootDelay, Value: 500 * time.Millisecond, Usage: "time from Scheduled to Running"},
			&cli.DurationFlag{Name: flagIPDelay, Value: 500 * time.Millisecond, Usage: "time from Running until the guest agent reports an address"},
			&cli.DurationFlag{Name: flagMigrationDur, Value: time.Second, Usage: "how long a live migration's transfer runs (migration phase Running to Succeeded)"},
			&cli.BoolFlag{Name: flagGuestClusters, Usage: "play the guest clusters: a kube-apiserver per guest cluster a VM is labelled with (DIR/guests/<cluster>/kubeconfig), running VMs join as Nodes, their K3s/RKE2 auto-deploy manifests are applied"},
			&cli.StringFlag{Name: flagAuditLog, Usage: "write kube-apiserver's audit log (every request at level Metadata, JSON lines) to this file; off when empty"},
			&cli.StringFlag{Name: flagLedger, EnvVars: []string{LedgerEnv}, Usage: "append one line to this file when the simulator stops: start, stop, minutes alive, whether it got ready, requests its kube-apiserver served (make test sums them); off when empty"},
			&cli.StringFlag{Name: flagGuestIface, Usage: "put running guests' addresses on this interface and answer SSH on them as the guest would (for a private network namespace, as the end-to-end harness makes; never on a host's network); with --guest-clusters, the real kube-vip (--bin-dir/kube-vip) also runs for each guest node its DaemonSet schedules on, in the node's own network namespace; off when empty"},
			&cli.DurationFlag{Name: flagNodeGrace, Value: DefaultNodeMonitorGracePeriod, Usage: "kube-controller-manager's --node-monitor-grace-period: how long after a host stops renewing its node Lease (fault host-down) its Node turns Ready Unknown"},
			&cli.BoolFlag{Name: flagVerbose, Usage: "log each start-up step with its timing"},
			&cli.DurationFlag{Name: flagStartTimeout, Value: 2 * time.Minute, Usage: "give up if the simulator is not ready within this time"},
		},
		Action:   runAction,
		Commands: []*cli.Command{faultCommand(), tuneCommand(), statusCommand(), maintenanceCommand(), upgradeCommand(), kubeVIPExecCommand(), kubeVirtExecCommand()},
	}
}

// binDirFlag is --bin-dir, the directory of the tools named.
func binDirFlag(tools string) cli.Flag {
	return &cli.StringFlag{Name: flagBinDir, Usage: "directory holding " + tools + " (default: this binary's directory)"}
}

// binDirOf is --bin-dir, else the directory of this binary.
func binDirOf(c *cli.Context) (string, error) {
	if d := c.String(flagBinDir); d != "" {
		return d, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find bin dir: %w", err)
	}
	return filepath.Dir(exe), nil
}

// childGCPercent is the GOGC the simulator runs with, and gives the
// processes it starts (kube-apiserver, etcd, the controllers, KubeVirt's
// and Harvester's), when the environment sets none. Go's default, 100,
// has them collect twice as often: spare cores on a real host absorb
// that, two shared ones do not (make test used about 18% less CPU with
// 200). It trades memory for CPU and changes no behaviour.
const childGCPercent = 200

// setGCPercent applies childGCPercent unless GOGC is set.
func setGCPercent() error {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	debug.SetGCPercent(childGCPercent)
	return os.Setenv("GOGC", strconv.Itoa(childGCPercent))
}

func runAction(c *cli.Context) error {
	if err := setGCPercent(); err != nil {
		return fmt.Errorf("set GOGC: %w", err)
	}
	binDir, err := binDirOf(c)
	if err != nil {
		return err
	}
	auditLog := c.String(flagAuditLog)
	if auditLog != "" {
		abs, err := filepath.Abs(auditLog)
		if err != nil {
			return fmt.Errorf("--%s: %w", flagAuditLog, err)
		}
		auditLog = abs
	}
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return Run(ctx, Options{
		StateDir: c.String(flagStateDir), BinDir: binDir,
		Hosts: c.Int(flagHosts), Zones: c.Int(flagZones),
		ScheduleDelay: c.Duration(flagScheduleDelay), BootDelay: c.Duration(flagBootDelay), IPDelay: c.Duration(flagIPDelay),
		MigrationDuration: c.Duration(flagMigrationDur),
		StartTimeout:      c.Duration(flagStartTimeout), GuestClusters: c.Bool(flagGuestClusters), AuditLog: auditLog,
		Ledger:         c.String(flagLedger),
		GuestInterface: c.String(flagGuestIface), NodeMonitorGracePeriod: c.Duration(flagNodeGrace),
		Log: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel(c.Bool(flagVerbose))})),
	})
}

// stateDirFlag is made anew for each command: urfave/cli flags keep state.
func stateDirFlag() cli.Flag {
	return &cli.StringFlag{Name: flagStateDir, Usage: "directory for the simulator's data, kubeconfig and ready file (required)", EnvVars: []string{"HARVESTER_SIM_STATE_DIR"}}
}

func requireStateDir(c *cli.Context) error {
	if stateDirOf(c) == "" {
		return fmt.Errorf("--%s: required: the directory of the running simulator", flagStateDir)
	}
	return nil
}

// stateDirOf is --state-dir as given to the command or to any command
// above it (`maintenance --state-dir D enable HOST` and `maintenance
// enable --state-dir D HOST` alike).
func stateDirOf(c *cli.Context) string {
	for _, x := range c.Lineage() {
		if v := x.String(flagStateDir); v != "" {
			return v
		}
	}
	return ""
}

// simClients connects to the simulator running in --state-dir.
func simClients(c *cli.Context) (*kubernetes.Clientset, *dynamic.DynamicClient, error) {
	cfg, err := kubeapi.ConfigFromFile(filepath.Join(stateDirOf(c), KubeconfigFile), "harvester-sim")
	if err != nil {
		return nil, nil, fmt.Errorf("read the simulator's kubeconfig: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	return kube, dyn, err
}

// kubeVIPExecCommand is the step between the simulator and a guest node's
// kube-vip (see kubevip.Exec); never run by hand.
func kubeVIPExecCommand() *cli.Command {
	return &cli.Command{
		Name: kubevip.ExecCommand, Hidden: true, SkipFlagParsing: true,
		Action: func(c *cli.Context) error { return kubevip.Exec(c.Args().Slice()) },
	}
}

// kubeVirtExecCommand is the step between the simulator and virt-api or
// virt-controller (see kubevirt.Exec); never run by hand.
func kubeVirtExecCommand() *cli.Command {
	return &cli.Command{
		Name: kubevirt.ExecCommand, Hidden: true, SkipFlagParsing: true,
		Action: func(c *cli.Context) error { return kubevirt.Exec(c.Args().Slice()) },
	}
}

func statusCommand() *cli.Command {
	return &cli.Command{
		Name: "status", Usage: "show the simulator's hosts, virtual machines (host, zone, IP), load balancers, IP pools and guest clusters (nodes, taints, zones, add-ons)",
		Flags: []cli.Flag{stateDirFlag()}, Before: requireStateDir,
		Action: func(c *cli.Context) error {
			kube, dyn, err := simClients(c)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context, 30*time.Second)
			defer cancel()
			if err := PrintStatus(ctx, kube, dyn, c.App.Writer); err != nil {
				return err
			}
			return PrintGuests(ctx, c.String(flagStateDir), c.App.Writer)
		},
	}
}

func logLevel(verbose bool) slog.Level {
	if verbose {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

func faultCommand() *cli.Command {
	withKube := func(fn func(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, c *cli.Context) error) cli.ActionFunc {
		return func(c *cli.Context) error {
			kube, dyn, err := simClients(c)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(c.Context, time.Minute)
			defer cancel()
			return fn(ctx, kube, dyn, c)
		}
	}
	one := func(c *cli.Context, what string) (string, error) {
		if c.NArg() != 1 {
			return "", fmt.Errorf("%s: want exactly one argument, got %d", what, c.NArg())
		}
		return c.Args().First(), nil
	}
	vmFault := func(name, usage string) *cli.Command {
		return &cli.Command{
			Name: name, Usage: usage, ArgsUsage: "NAMESPACE/NAME-GLOB",
			Flags: []cli.Flag{&cli.BoolFlag{Name: flagRemove, Usage: "remove the pattern instead of adding it"}},
			Action: withKube(func(ctx context.Context, kube kubernetes.Interface, _ dynamic.Interface, c *cli.Context) error {
				pattern, err := one(c, name)
				if err != nil {
					return err
				}
				return fault.SetVM(ctx, kube, name, pattern, c.Bool(flagRemove))
			}),
		}
	}
	return &cli.Command{
		Name:   "fault",
		Usage:  "inject faults into a running simulator",
		Flags:  []cli.Flag{stateDirFlag()},
		Before: requireStateDir,
		Subcommands: []*cli.Command{
			{
				Name: fault.RejectCreate, Usage: "make kube-apiserver refuse creates of a resource (a ValidatingAdmissionPolicy); returns once in effect",
				ArgsUsage: "RESOURCE[.GROUP] (e.g. virtualmachines.kubevirt.io, secrets)",
				Action: withKube(func(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, c *cli.Context) error {
					res, err := one(c, fault.RejectCreate)
					if err != nil {
						return err
					}
					return fault.RejectCreates(ctx, kube, dyn, res)
				}),
			},
			vmFault(fault.StuckScheduling, "keep the VMIs of matching VMs in Scheduling"),
			vmFault(fault.NoIP, "never give the VMIs of matching VMs an IP address"),
			vmFault(fault.IPv6Only, "give the VMIs of matching VMs IPv6 addresses only (a link-local and a global one per interface)"),
			vmFault(fault.DockerEngine, "matching guests run a Docker engine (:2376 listening), so rancher-machine start/restart find one (needs --guest-interface)"),
			vmFault(fault.GuestBridges, "the guest agent of matching VMs reports docker0, cni0 and flannel.1 (interfaces of no VM NIC) before the VM's NICs"),
			{
				Name: fault.ExhaustPool, Usage: "matching IPPools hand out no address (no IP addresses available in range set); returns once their status shows it",
				ArgsUsage: "IPPOOL-NAME-GLOB",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: flagRemove, Usage: "remove the pattern instead of adding it"}},
				Action: withKube(func(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, c *cli.Context) error {
					pattern, err := one(c, fault.ExhaustPool)
					if err != nil {
						return err
					}
					return fault.SetExhaustPool(ctx, kube, dyn, pattern, c.Bool(flagRemove))
				}),
			},
			{
				Name: fault.DHCPAgentDown, Usage: "take the agent of matching managed-DHCP IPPools (network.harvesterhci.io) down: no new leases on their networks, AgentReady False; returns once their status shows it",
				ArgsUsage: "NAMESPACE/NAME-GLOB",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: flagRemove, Usage: "remove the pattern instead of adding it"}},
				Action: withKube(func(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, c *cli.Context) error {
					pattern, err := one(c, fault.DHCPAgentDown)
					if err != nil {
						return err
					}
					return fault.SetDHCPAgentDown(ctx, kube, dyn, pattern, c.Bool(flagRemove))
				}),
			},
			{
				Name: fault.DelayAllocation, Usage: "matching LoadBalancers get their address only --delay after their creation",
				ArgsUsage: "NAMESPACE/NAME-GLOB",
				Flags: []cli.Flag{
					&cli.DurationFlag{Name: flagDelay, Value: 5 * time.Second, Usage: "how long after its creation a matching LoadBalancer gets its address"},
					&cli.BoolFlag{Name: flagRemove, Usage: "remove the pattern instead of adding it"},
				},
				Action: withKube(func(ctx context.Context, kube kubernetes.Interface, _ dynamic.Interface, c *cli.Context) error {
					pattern, err := one(c, fault.DelayAllocation)
					if err != nil {
						return err
					}
					return fault.SetDelayAllocation(ctx, kube, pattern, c.Duration(flagDelay), c.Bool(flagRemove))
				}),
			},
			{
				Name: fault.HostDown, Usage: "take a host down (its kubelet stops renewing the node Lease and posting status, its guests stop answering) or, with --remove, up again; returns once the simulator acts on it, the Node turns NotReady after --node-monitor-grace-period",
				ArgsUsage: "NODE (e.g. harvester-node-1)",
				Flags:     []cli.Flag{&cli.BoolFlag{Name: flagRemove, Usage: "bring the host up again"}},
				Action: withKube(func(ctx context.Context, kube kubernetes.Interface, _ dynamic.Interface, c *cli.Context) error {
					node, err := one(c, fault.HostDown)
					if err != nil {
						return err
					}
					return fault.SetHostDown(ctx, kube, node, c.Bool(flagRemove))
				}),
			},
			{
				Name: fault.RestartAPIServer, Usage: "stop kube-apiserver and start it again on the same port",
				Action: func(c *cli.Context) error {
					ctx, cancel := context.WithTimeout(c.Context, restartDeadline)
					defer cancel()
					return RestartAPIServer(ctx, c.String(flagStateDir))
				},
			},
			{
				Name: fault.FreezeAPIServer, Usage: "stop kube-apiserver (SIGSTOP) and continue it (SIGCONT) after DURATION; returns once it is stopped",
				ArgsUsage: "DURATION (e.g. 5s)",
				Action: func(c *cli.Context) error {
					arg, err := one(c, fault.FreezeAPIServer)
					if err != nil {
						return err
					}
					d, err := time.ParseDuration(arg)
					if err != nil {
						return fmt.Errorf("%s: DURATION %q: %w (e.g. 5s)", fault.FreezeAPIServer, arg, err)
					}
					ctx, cancel := context.WithTimeout(c.Context, time.Minute)
					defer cancel()
					return FreezeAPIServer(ctx, c.String(flagStateDir), d)
				},
			},
			{
				Name: fault.ClearAll, Usage: "remove every fault; returns once creates are accepted again",
				Action: withKube(func(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, _ *cli.Context) error {
					return fault.Clear(ctx, kube, dyn)
				}),
			},
		},
	}
}
