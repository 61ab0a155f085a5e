package kubevip

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/harvester-kit/harvester-machine/sim/podenv"
)

// ExecCommand is the hidden harvester-sim command the runner starts in the
// node's namespaces (network: the node's; mount and UTS: private, made at
// clone): it sets the node's hostname, puts the ServiceAccount files where
// a pod has them, keeps only the capabilities the DaemonSet grants and
// executes kube-vip.
const ExecCommand = "kube-vip-exec"

// keptCaps are the capabilities the chart's DaemonSet grants (drop ALL,
// add NET_ADMIN and NET_RAW).
var keptCaps = []int{unix.CAP_NET_ADMIN, unix.CAP_NET_RAW}

// execArgs are ExecCommand's arguments: HOSTNAME SA-DIR -- ARGV...
func execArgs(hostname, saDir string, argv []string) []string {
	return append([]string{ExecCommand, hostname, saDir, "--"}, argv...)
}

// Exec is ExecCommand: args are what execArgs made, after the command.
// It returns only on failure.
func Exec(args []string) error {
	if len(args) < 4 || args[2] != "--" {
		return errors.New(ExecCommand + ": usage: HOSTNAME SA-DIR -- ARGV")
	}
	hostname, saDir, argv := args[0], args[1], args[3:]
	if err := podenv.MakePrivate(); err != nil {
		return fmt.Errorf("%s: %w", ExecCommand, err)
	}
	if err := unix.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("%s: set the hostname: %w", ExecCommand, err)
	}
	if err := podenv.MountServiceAccount(saDir); err != nil {
		return fmt.Errorf("%s: %w", ExecCommand, err)
	}
	// A container's filesystem has no admin kubeconfig: hide the host's,
	// which kube-vip would prefer to its in-cluster configuration.
	for _, dir := range []string{"/etc/kubernetes", "/.kube"} {
		if _, err := os.Stat(dir); err == nil {
			if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755"); err != nil {
				return fmt.Errorf("%s: hide %s: %w", ExecCommand, dir, err)
			}
		}
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	runtime.LockOSThread() // capabilities are per thread: drop them on the one that executes
	if err := keepOnly(keptCaps); err != nil {
		return fmt.Errorf("%s: %w", ExecCommand, err)
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	return fmt.Errorf("%s: execute %s: %w", ExecCommand, argv[0], err)
}

// keepOnly drops every capability but keep from the bounding set and
// clears the inheritable and ambient sets, so that the program executed
// next (as uid 0, root in its user namespace) holds exactly keep; no new
// privileges can be gained after.
func keepOnly(keep []int) error {
	data, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return err
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if containsCap(keep, c) {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d: %w", c, err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear the ambient capabilities: %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var caps [2]unix.CapUserData
	if err := unix.Capget(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("read capabilities: %w", err)
	}
	caps[0].Inheritable, caps[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return fmt.Errorf("clear the inheritable capabilities: %w", err)
	}
	return unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
}

func containsCap(caps []int, c int) bool {
	for _, k := range caps {
		if k == c {
			return true
		}
	}
	return false
}
