// Package pluginserver serves a libmachine driver to the rancher-machine
// (or docker-machine) process that started it, as libmachine's
// plugin.RegisterDriver does, except for how the process ends: it exits
// when its parent exits, at once, whatever the load, and on Close only once
// the reply to Close is written (closing.go).
//
// libmachine's plugin exits on a Close call or when no heartbeat came for
// 10 s. rancher-machine sends no Close when a command fails (it calls
// os.Exit, which runs no deferred Close) or when it is killed, so its plugin
// outlived it by 10 s or more; and on a busy machine a heartbeat (every 5 s)
// can come late enough to end a plugin in the middle of a command. Here the
// parent's exit is watched through a pidfd (Linux 5.3+; the parent-death
// signal where that is not available), and the heartbeat timeout is only
// the last resort for a parent that is alive but gone silent.
package pluginserver

import (
	"fmt"
	"net"
	"net/http"
	"net/rpc"
	"os"
	"time"

	"github.com/rancher/machine/libmachine/drivers"
	"github.com/rancher/machine/libmachine/drivers/plugin/localbinary"
	rpcdriver "github.com/rancher/machine/libmachine/drivers/rpc"
	machinelog "github.com/rancher/machine/libmachine/log"
)

// Heartbeat timeouts: libmachine's, used when the parent cannot be watched,
// and the last resort when it is (rancher-machine sends one every 5 s).
const (
	unwatchedHeartbeatTimeout = 10 * time.Second
	watchedHeartbeatTimeout   = 2 * time.Minute
)

// Serve serves d until the parent closes it (exit 0) or exits (exit 1);
// it never returns.
func Serve(d drivers.Driver) {
	if os.Getenv(localbinary.PluginEnvKey) != localbinary.PluginEnvVal {
		fmt.Fprintln(os.Stderr, "This is a rancher-machine plugin binary: rancher-machine (or docker-machine) runs it; it is not meant to be run directly.")
		os.Exit(1)
	}
	machinelog.SetDebug(true)
	_ = os.Setenv("MACHINE_DEBUG", "1")

	parentGone, err := watchParent()
	timeout := watchedHeartbeatTimeout
	if err != nil {
		machinelog.Debugf("cannot watch the parent process (%v); ending after %s without a heartbeat", err, unwatchedHeartbeatTimeout)
		timeout = unwatchedHeartbeatTimeout
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintf(os.Stderr, "start the RPC server: %v\n", err)
		os.Exit(1)
	}
	// The first line on stdout is the address rancher-machine dials.
	fmt.Println(l.Addr())
	os.Exit(serve(d, l, parentGone, timeout))
}

// serve serves d over RPC on l until the plugin ends, and returns its exit
// status (see run).
func serve(d drivers.Driver, l net.Listener, parentGone <-chan struct{}, timeout time.Duration) int {
	driver := rpcdriver.NewRPCServerDriver(d)
	c := newClosing()
	server := rpc.NewServer()
	for _, name := range []string{rpcdriver.RPCServiceNameV0, rpcdriver.RPCServiceNameV1} {
		if err := server.RegisterName(name, &service{RPCServerDriver: driver, closing: c}); err != nil {
			fmt.Fprintf(os.Stderr, "register the RPC service %s: %v\n", name, err)
			return 1
		}
	}
	// net/rpc over HTTP: the server answers the CONNECT of rpc.DialHTTP.
	go func() { _ = http.Serve(listener{Listener: l, closing: c}, server) }() //nolint:gosec // loopback only; rancher-machine's own protocol has no timeouts
	return run(events{closed: c.done, heartbeat: driver.HeartbeatCh, parentGone: parentGone}, timeout)
}

// events end the plugin, or keep it alive (heartbeat).
type events struct {
	closed     <-chan struct{} // Close was called and its reply written
	heartbeat  <-chan bool
	parentGone <-chan struct{}
}

// run waits for the end of the plugin and returns its exit status: 0 when
// closed, 1 when the parent exited or was silent for timeout.
func run(e events, timeout time.Duration) int {
	silence := time.NewTimer(timeout)
	defer silence.Stop()
	for {
		select {
		case <-e.closed:
			return 0
		case <-e.parentGone:
			machinelog.Debug("rancher-machine exited; ending the plugin with it")
			return 1
		case <-e.heartbeat:
			silence.Reset(timeout)
		case <-silence.C:
			machinelog.Debugf("no heartbeat from rancher-machine for %s; ending the plugin", timeout)
			return 1
		}
	}
}
