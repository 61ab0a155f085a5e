package pluginserver

import (
	"bufio"
	"errors"
	"net"
	"net/rpc"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rancher/machine/libmachine/drivers"
	"github.com/rancher/machine/libmachine/drivers/plugin/localbinary"
	rpcdriver "github.com/rancher/machine/libmachine/drivers/rpc"
	"github.com/rancher/machine/libmachine/version"
)

// Calls as rancher-machine makes them (client_driver.go).
const (
	getVersion = rpcdriver.RPCServiceNameV1 + rpcdriver.GetVersionMethod
	closeCall  = rpcdriver.RPCServiceNameV1 + rpcdriver.CloseMethod
)

// slowWrites is a TCP listener whose connections take writeDelay before
// each write, and count the writes started and finished.
type slowWrites struct {
	net.Listener
	started, finished *atomic.Int32
}

const writeDelay = 100 * time.Millisecond

func (l slowWrites) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	return slowConn{c, l.started, l.finished}, err
}

type slowConn struct {
	net.Conn
	started, finished *atomic.Int32
}

func (c slowConn) Write(b []byte) (int, error) {
	c.started.Add(1)
	defer c.finished.Add(1)
	time.Sleep(writeDelay)
	return c.Conn.Write(b)
}

// TestServeEndsAfterTheCloseReply: over real net/rpc, a Close is answered,
// and the server ends (status 0) only once that answer is written, however
// slow the write.
func TestServeEndsAfterTheCloseReply(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	l := slowWrites{Listener: tcp, started: new(atomic.Int32), finished: new(atomic.Int32)}
	type ended struct {
		status            int
		started, finished int32
	}
	done := make(chan ended, 1)
	go func() {
		status := serve(drivers.NewDriverNotSupported("test", "m1", t.TempDir()), l, nil, time.Hour)
		done <- ended{status, l.started.Load(), l.finished.Load()}
	}()
	client, err := rpc.DialHTTP("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var v int
	if err := client.Call(getVersion, struct{}{}, &v); err != nil || v != version.APIVersion {
		t.Fatalf("GetVersion: %d, %v; want %d", v, err, version.APIVersion)
	}
	if err := client.Call(closeCall, struct{}{}, nil); err != nil {
		t.Fatalf("Close: %v, want its reply", err)
	}
	select {
	case e := <-done:
		if e.status != 0 || e.started != e.finished {
			t.Errorf("serve ended with %d while %d of %d writes were done; want 0, every write done", e.status, e.finished, e.started)
		}
	case <-time.After(time.Minute):
		t.Fatal("serve did not end after Close")
	}
}

// TestCloseWithoutReply: a Close whose reply is never written (its client
// gone) still ends the plugin, replyWait after the call, not before.
func TestCloseWithoutReply(t *testing.T) {
	c := newClosing()
	s := &service{closing: c}
	start := time.Now()
	if err := s.Close(nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
		t.Fatal("closed before replyWait without a reply")
	case <-time.After(replyWait / 2):
	}
	<-c.done
	if took := time.Since(start); took < replyWait {
		t.Errorf("closed %s after Close, before replyWait (%s)", took, replyWait)
	}
}

// TestPluginAnswersCloseThenExits: a plugin process, started and closed as
// rancher-machine does, answers Close every time (no connection ended
// instead of the reply) and exits with 0 well before replyWait.
func TestPluginAnswersCloseThenExits(t *testing.T) {
	for i := range 20 {
		if err := closePlugin(t); err != nil {
			t.Fatalf("plugin %d: %v", i, err)
		}
	}
}

func closePlugin(t *testing.T) error {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=plugin", localbinary.PluginEnvKey+"="+localbinary.PluginEnvVal)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return err
	}
	client, err := rpc.DialHTTP("tcp", strings.TrimSpace(addr))
	if err != nil {
		return err
	}
	defer client.Close()
	var v int
	if err := client.Call(getVersion, struct{}{}, &v); err != nil {
		return err
	}
	if err := client.Call(closeCall, struct{}{}, nil); err != nil {
		return errors.Join(errors.New("no reply to Close"), err)
	}
	replied := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			return errors.Join(errors.New("plugin exit"), err)
		}
	case <-time.After(replyWait / 2):
		return errors.New("plugin still running half replyWait after its reply to Close")
	}
	t.Logf("exited %s after the reply", time.Since(replied).Round(time.Millisecond))
	return nil
}
