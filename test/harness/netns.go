// Package harness is the one end-to-end harness: every test/e2e package's
// TestMain, `make demo` and `make bench` run inside a private network
// namespace it makes, holding only loopback and the simulator's guest
// network, with no default route: a connection to any other address fails
// at once (ENETUNREACH), so nothing they start can send a packet off the
// machine. Inside, it starts the simulated Harvester (with its guest
// network on) and the clients a package's tests share.
package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"github.com/harvester-kit/harvester-machine/sim/guestnet"
)

// envNetns tells a process where it runs: "enter" (the re-executed child
// that must set its namespace up), "isolated IFACE" (inside, set up; IFACE
// is the guest network's interface) or "unavailable: WHY".
const envNetns = "HARVESTER_E2E_NETNS"

// GuestDummy is the dummy interface that carries the guests' addresses
// where the kernel has the dummy link type; elsewhere loopback does.
const GuestDummy = "guests0"

// Isolation says whether this process runs in the private namespace.
type Isolation struct {
	Isolated       bool
	GuestInterface string // the interface the simulator puts guest addresses on
	Why            string // when not isolated: why not
}

// Enter makes sure the rest of the program runs in a private network
// namespace. Outside one it re-executes the program inside a new namespace
// (`unshare --net` as root, else `unshare --net --map-root-user`, done with
// clone flags) and exits with the child's status; it returns only inside,
// or when no namespace can be made: then Isolation says why, and the
// caller must skip every step that would reach a guest.
func Enter() Isolation {
	v := os.Getenv(envNetns)
	switch {
	case v == "enter":
		iface, err := setUp()
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: set up the private network namespace:", err)
			os.Exit(1)
		}
		_ = os.Setenv(envNetns, "isolated "+iface)
		return Isolation{Isolated: true, GuestInterface: iface}
	case strings.HasPrefix(v, "isolated "):
		if err := Guard(); err == nil { // a child of an isolated process
			return Isolation{Isolated: true, GuestInterface: strings.TrimPrefix(v, "isolated ")}
		}
	case strings.HasPrefix(v, "unavailable: "):
		return Isolation{Why: strings.TrimPrefix(v, "unavailable: ")}
	}
	code, err := reexec()
	if err == nil {
		os.Exit(code)
	}
	why := "no private network namespace: " + err.Error()
	_ = os.Setenv(envNetns, "unavailable: "+why)
	fmt.Fprintln(os.Stderr, "harness:", why, "- steps that would reach a guest are skipped")
	return Isolation{Why: why}
}

// SimArgs are the harvester-sim flags for this isolation: inside the
// private namespace, the guest network on its interface; outside, none
// (guests get addresses nobody may dial).
func (i Isolation) SimArgs() []string {
	if !i.Isolated {
		return nil
	}
	return []string{"--" + guestnet.FlagInterface + "=" + i.GuestInterface}
}

// namespaceAttrs are the ways to make the namespace, best first.
func namespaceAttrs() []*syscall.SysProcAttr {
	var out []*syscall.SysProcAttr
	if os.Geteuid() == 0 {
		out = append(out, &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL})
	}
	return append(out, &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWNET | syscall.CLONE_NEWUSER,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  syscall.SIGKILL,
	})
}

// reexec runs this program again in a new network namespace, passing
// signals on, and returns its exit status; an error means no namespace
// could be made.
func reexec() (int, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, attr := range namespaceAttrs() {
		cmd := exec.Command(exe, os.Args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), envNetns+"=enter")
		cmd.SysProcAttr = attr
		if err := cmd.Start(); err != nil {
			errs = append(errs, err)
			continue
		}
		return wait(cmd), nil
	}
	return 0, errors.Join(errs...)
}

// wait passes SIGINT, SIGTERM and SIGQUIT on to the child and returns its
// exit status (128+signal when a signal ended it).
func wait(cmd *exec.Cmd) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "harness:", err)
		return 1
	}
	return 0
}

// setUp brings loopback up and makes the guest network's interface (the
// dummy guests0, or loopback where the kernel has no dummy links), then
// checks the result with Guard.
func setUp() (string, error) {
	if err := guestnet.LinkUp("lo"); err != nil {
		return "", err
	}
	iface := GuestDummy
	if err := guestnet.AddDummy(GuestDummy); errors.Is(err, guestnet.ErrNoDummy) {
		iface = "lo"
	} else if err != nil {
		return "", err
	}
	return iface, Guard()
}
