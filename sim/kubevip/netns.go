package kubevip

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"

	"golang.org/x/sys/unix"
)

// newNetns makes a network namespace and returns an open descriptor of it
// (the namespace lives as long as the descriptor or a process in it).
func newNetns() (int, error) {
	var fd int
	err := onThread(func() error {
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(orig)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare the network namespace: %w", err)
		}
		fd, err = unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if serr := unix.Setns(orig, unix.CLONE_NEWNET); serr != nil {
			return errThreadLost{serr}
		}
		return err
	})
	return fd, err
}

// inNetns runs f on one OS thread inside the network namespace open at fd:
// sockets it opens (netlink requests, listeners) and processes it starts
// belong to that namespace.
func inNetns(fd int, f func() error) error {
	return onThread(func() error {
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(orig)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("enter the node's network namespace: %w", err)
		}
		ferr := f()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			return errThreadLost{err}
		}
		return ferr
	})
}

// errThreadLost: the thread could not return to its namespace; it is not
// given back to the Go scheduler (it ends with its goroutine).
type errThreadLost struct{ err error }

func (e errThreadLost) Error() string {
	return "return to the simulator's network namespace: " + e.err.Error()
}

// onThread runs f locked to a fresh OS thread; the thread is given back
// only when f did not leave it in another namespace.
func onThread(f func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		err := f()
		if !errors.As(err, new(errThreadLost)) {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// Addrs lists the addresses on interface name in the network namespace of
// process pid (what `ip -br addr show NAME` shows there).
func Addrs(pid int, name string) ([]netip.Prefix, error) {
	fd, err := unix.Open(fmt.Sprintf("/proc/%d/ns/net", pid), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("addresses of %s in the namespace of process %d: %w", name, pid, err)
	}
	defer unix.Close(fd)
	var out []netip.Prefix
	err = inNetns(fd, func() error {
		ifi, err := net.InterfaceByName(name)
		if err != nil {
			return err
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				out = append(out, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("addresses of %s in the namespace of process %d: %w", name, pid, err)
	}
	return out, nil
}
