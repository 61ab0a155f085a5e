package pluginserver

import (
	"errors"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// watchParent returns a channel closed when the parent process exits.
func watchParent() (<-chan struct{}, error) {
	ppid := os.Getppid()
	if ppid <= 1 {
		return nil, errors.New("no parent process (already re-parented to init)")
	}
	fd, err := unix.PidfdOpen(ppid, 0)
	if err != nil {
		return deathSignal(ppid)
	}
	gone := make(chan struct{})
	// The parent may have exited before the pidfd was opened, and its pid
	// been reused: the pidfd is then of another process, but this process
	// was already re-parented.
	if os.Getppid() != ppid {
		_ = unix.Close(fd)
		close(gone)
		return gone, nil
	}
	go func() {
		defer close(gone)
		defer unix.Close(fd) //nolint:errcheck // read-only descriptor
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			// A pidfd becomes readable when its process exits.
			if _, err := unix.Poll(fds, -1); err == nil || !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
	return gone, nil
}

// deathSignal asks the kernel for SIGTERM when the parent exits (kernels
// without pidfd_open).
func deathSignal(ppid int) (<-chan struct{}, error) {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0); err != nil {
		return nil, err
	}
	gone := make(chan struct{})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	if os.Getppid() != ppid {
		close(gone)
		return gone, nil
	}
	go func() {
		<-sig
		close(gone)
	}()
	return gone, nil
}
