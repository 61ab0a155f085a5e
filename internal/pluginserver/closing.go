package pluginserver

import (
	"net"
	"sync"
	"time"

	rpcdriver "github.com/rancher/machine/libmachine/drivers/rpc"
	machinelog "github.com/rancher/machine/libmachine/log"
)

// rancher-machine calls Close and waits for its reply before it goes on
// (rancher/machine v0.15.0-rancher134, libmachine/drivers/rpc
// client_driver.go, close). libmachine's RPC server hands Close to the
// plugin's main loop, which exits at once, while the reply is still being
// written: when the exit wins, the reply is lost and rancher-machine sees
// the connection end only once the kernel has torn the process down (its
// memory first, its sockets after). Here the process ends right after the
// reply has been written.

// replyWait bounds the wait for the reply to Close to be written (a client
// gone in between).
const replyWait = time.Second

// closing tracks a Close call and the write of its reply.
type closing struct {
	requested chan struct{} // closed by Close
	done      chan struct{} // closed once the reply is written, or replyWait after Close
	request   sync.Once
	finish    sync.Once
}

func newClosing() *closing {
	return &closing{requested: make(chan struct{}), done: make(chan struct{})}
}

// service is libmachine's RPC server for the driver with Close replaced:
// it only records the call, so that its reply is written before the
// plugin ends.
type service struct {
	*rpcdriver.RPCServerDriver
	closing *closing
}

// Close ends the plugin once its reply has been written.
func (s *service) Close(_, _ *struct{}) error {
	c := s.closing
	c.request.Do(func() {
		machinelog.Debug("closed by rancher-machine")
		close(c.requested)
		time.AfterFunc(replyWait, c.replied)
	})
	return nil
}

// afterClose reports whether Close has been called: a write begun after
// that is its reply (rancher-machine makes no other call after Close, and
// stops its heartbeats before). A write begun before may end after it.
func (c *closing) afterClose() bool {
	select {
	case <-c.requested:
		return true
	default:
		return false
	}
}

func (c *closing) replied() { c.finish.Do(func() { close(c.done) }) }

// listener hands out connections that report the write of the reply to
// Close.
type listener struct {
	net.Listener
	closing *closing
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return conn{Conn: c, closing: l.closing}, nil
}

type conn struct {
	net.Conn
	closing *closing
}

func (c conn) Write(b []byte) (int, error) {
	reply := c.closing.afterClose()
	n, err := c.Conn.Write(b)
	if reply {
		c.closing.replied()
	}
	return n, err
}
