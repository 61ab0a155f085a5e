package kubevip

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/harvester-kit/harvester-machine/sim/guestnet"
)

// NodeInterface is the interface the node's namespace has on the guest
// network (the default route's, which kube-vip picks when vip_interface
// is empty).
const NodeInterface = "eth0"

// Restart back-off of a container that exits, as the kubelet's
// (CrashLoopBackOff): 10 s doubling up to 5 minutes.
const (
	backoffFirst = 10 * time.Second
	backoffMax   = 5 * time.Minute
)

// spec is everything one node's kube-vip needs.
type spec struct {
	cluster, node, pod, nodeIP string
	dir                        string   // the node's directory: state, log, service account files
	exe                        string   // harvester-sim, for ExecCommand
	argv, env                  []string // kube-vip's, as the container's
	api                        netip.AddrPort
	apiTarget                  string                          // the guest API server (host:port in the simulator's namespace)
	refreshToken               func(ctx context.Context) error // writes the ServiceAccount files
	// reportPod and removePod keep the node's daemon pod in the guest as
	// the kubelet does (its status follows the process's state).
	reportPod func(ctx context.Context, st State) error
	removePod func(ctx context.Context) error
	log       *slog.Logger
}

// hostVeth is the name of the node's veth in the simulator's namespace.
func hostVeth(cluster, node string) string {
	sum := sha256.Sum256([]byte(cluster + "/" + node))
	return "kv" + hex.EncodeToString(sum[:])[:10]
}

// nodeProc is one node's kube-vip, restarted when it exits, until stopped.
type nodeProc struct {
	spec     spec
	key      string // what it was started for: template hash and node address
	cancel   context.CancelFunc
	done     chan struct{}
	reported chan struct{} // closed when the pod reporter ended
	dirty    chan struct{} // the state changed: report the pod

	mu    sync.Mutex
	state State
}

func startNode(ctx context.Context, s spec, key string) *nodeProc {
	ctx, cancel := context.WithCancel(ctx)
	p := &nodeProc{spec: s, key: key, cancel: cancel, done: make(chan struct{}),
		reported: make(chan struct{}), dirty: make(chan struct{}, 1),
		state: State{Node: s.node, Pod: s.pod, Phase: "waiting", Reason: "ContainerCreating", Since: time.Now(),
			Log: filepath.Join(s.dir, "kube-vip.log"), GratuitousARPs: map[string]int{}}}
	p.save()
	go p.reportLoop(ctx)
	go func() {
		defer close(p.done)
		if err := p.run(ctx); err != nil && ctx.Err() == nil {
			p.update(func(st *State) { st.Phase, st.Reason, st.LastError = "waiting", "CreateContainerError", err.Error() })
			s.log.Warn("kube-vip not started", "cluster", s.cluster, "node", s.node, "err", err)
		}
	}()
	return p
}

func (p *nodeProc) stop() {
	p.cancel()
	<-p.done
	<-p.reported
}

// reportLoop reports the pod whenever its phase, restarts or error change
// (not for every gratuitous ARP), and removes it at the end.
func (p *nodeProc) reportLoop(ctx context.Context) {
	defer close(p.reported)
	last := ""
	for {
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := p.spec.removePod(rctx); err != nil {
				p.spec.log.Warn("remove kube-vip's pod", "cluster", p.spec.cluster, "node", p.spec.node, "err", err)
			}
			return
		case <-p.dirty:
		}
		p.mu.Lock()
		st := p.state
		p.mu.Unlock()
		key := fmt.Sprint(st.Phase, st.Reason, st.Restarts, st.LastError, st.PID)
		if key == last {
			continue
		}
		if err := p.spec.reportPod(ctx, st); err != nil && ctx.Err() == nil {
			p.spec.log.Warn("report kube-vip's pod", "cluster", p.spec.cluster, "node", p.spec.node, "err", err)
			continue
		}
		last = key
	}
}

func (p *nodeProc) update(f func(*State)) {
	p.mu.Lock()
	f(&p.state)
	p.state.Since = time.Now()
	p.mu.Unlock()
	p.save()
}

func (p *nodeProc) save() {
	p.mu.Lock()
	st := p.state
	st.GratuitousARPs = map[string]int{}
	for k, v := range p.state.GratuitousARPs {
		st.GratuitousARPs[k] = v
	}
	p.mu.Unlock()
	if err := writeState(p.spec.dir, st); err != nil {
		p.spec.log.Warn("write kube-vip state", "node", p.spec.node, "err", err)
	}
	select {
	case p.dirty <- struct{}{}:
	default:
	}
}

// run sets the node's network namespace up, then runs kube-vip in it until
// ctx ends, restarting it with back-off when it exits.
func (p *nodeProc) run(ctx context.Context) error {
	s := p.spec
	netns, err := newNetns()
	if err != nil {
		return err
	}
	defer unix.Close(netns)
	veth := hostVeth(s.cluster, s.node)
	if err := guestnet.AddVeth(veth, NodeInterface, netns); err != nil {
		return err
	}
	defer func() {
		if err := guestnet.DelLink(veth); err != nil {
			s.log.Warn("remove the node's veth", "veth", veth, "err", err)
		}
	}()
	var api net.Listener
	err = inNetns(netns, func() error {
		var err error
		api, err = setUpNode(s)
		return err
	})
	if err != nil {
		return err
	}
	defer api.Close()
	go forward(api, s.apiTarget)
	arp, err := listenARP(veth)
	if err != nil {
		return err
	}
	go p.watchARP(ctx, arp)
	go p.refreshLoop(ctx)
	backoff := backoffFirst
	for {
		started := time.Now()
		// The kubelet mounts the token before it starts the container;
		// without one (no ServiceAccount yet) it retries.
		err := s.refreshToken(ctx)
		if err == nil {
			err = p.runOnce(ctx, netns)
		}
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			p.update(func(st *State) { st.Phase, st.Reason, st.LastError = "waiting", "RunContainerError", err.Error() })
		}
		if time.Since(started) > backoffMax {
			backoff = backoffFirst
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, backoffMax)
		p.update(func(st *State) { st.Restarts++ })
	}
}

// setUpNode runs inside the node's namespace: loopback and the node's
// interface up, the node's address on it, the default route through it,
// and the `kubernetes` Service's address on loopback with a listener that
// forwards to the guest's API server (what kube-proxy provides a node).
func setUpNode(s spec) (net.Listener, error) {
	for _, link := range []string{"lo", NodeInterface} {
		if err := guestnet.LinkUp(link); err != nil {
			return nil, err
		}
	}
	ip, err := netip.ParseAddr(s.nodeIP)
	if err != nil {
		return nil, fmt.Errorf("node %s address %q: %w", s.node, s.nodeIP, err)
	}
	if err := guestnet.AddAddr(NodeInterface, ip); err != nil {
		return nil, err
	}
	if err := guestnet.AddDefaultRoute(NodeInterface); err != nil {
		return nil, err
	}
	if err := guestnet.AddAddr("lo", s.api.Addr()); err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", s.api.String())
	if err != nil {
		return nil, fmt.Errorf("listen on the kubernetes Service address %s: %w", s.api, err)
	}
	return l, nil
}

// forward copies each connection accepted on l to target and back.
func forward(l net.Listener, target string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				return
			}
			defer up.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
			<-done
		}()
	}
}

func (p *nodeProc) refreshLoop(ctx context.Context) {
	t := time.NewTicker(tokenRefresh)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := p.spec.refreshToken(ctx); err != nil && ctx.Err() == nil {
				p.update(func(st *State) { st.LastError = err.Error() })
			}
		}
	}
}

// runOnce starts kube-vip in the node's namespaces and waits for it (or
// for ctx, then stops it as the kubelet does: SIGTERM, then SIGKILL after
// the grace period).
func (p *nodeProc) runOnce(ctx context.Context, netns int) error {
	s := p.spec
	logFile, err := os.OpenFile(p.state.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logFile.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(s.exe, execArgs(s.node, filepath.Join(s.dir, "serviceaccount"), s.argv)...)
	cmd.Env, cmd.Stdout, cmd.Stderr, cmd.Dir = s.env, w, w, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWUTS, Pdeathsig: syscall.SIGKILL}
	err = inNetns(netns, cmd.Start)
	w.Close()
	if err != nil {
		r.Close()
		return fmt.Errorf("start kube-vip: %w", err)
	}
	p.update(func(st *State) { st.Phase, st.Reason, st.PID = "running", "", cmd.Process.Pid })
	s.log.Info("kube-vip started", "cluster", s.cluster, "node", s.node, "pid", cmd.Process.Pid)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		p.scanLog(r, logFile)
	}()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-waited:
		case <-time.After(gracePeriod):
			_ = cmd.Process.Kill()
			err = <-waited
		}
	}
	<-scanned
	r.Close()
	code := cmd.ProcessState.ExitCode()
	p.update(func(st *State) { st.Phase, st.Reason, st.PID = "exited", fmt.Sprintf("exit code %d", code), 0 })
	s.log.Info("kube-vip exited", "cluster", s.cluster, "node", s.node, "code", code)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return err
	}
	return nil
}

// Timings: the ServiceAccount token is renewed as the kubelet does (at
// 80% of its hour); the grace period is a pod's default.
const (
	tokenTTL     = 3607 * time.Second
	tokenRefresh = 48 * time.Minute
	gracePeriod  = 30 * time.Second
)

// scanLog copies kube-vip's output to its log file and keeps its last
// error line in the state.
func (p *nodeProc) scanLog(r io.Reader, logFile io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		_, _ = fmt.Fprintln(logFile, line)
		if msg, ok := ErrorLine(line); ok {
			p.update(func(st *State) { st.LastError = msg })
		}
	}
}

// ErrorLine reports whether line, one of kube-vip's log lines, is an
// error, and returns it without its time. kube-vip logs through log/slog's
// default output ("DATE TIME LEVEL MESSAGE k=v...") or its text handler
// ("time=... level=ERROR msg=..."); client-go's (leader election, watches:
// "forbidden" when RBAC refuses) through klog ("E1125 21:11:17.123456
// PID file.go:N] MESSAGE").
func ErrorLine(line string) (string, bool) {
	if msg, ok := strings.CutPrefix(line, "harvester-sim: "+ExecCommand+": "); ok {
		return msg, true // the step before kube-vip failed
	}
	if f := strings.SplitN(line, " ", 4); len(f) == 4 && f[2] == "ERROR" {
		return f[3], true
	}
	if strings.Contains(line, " level=ERROR ") {
		if i := strings.Index(line, "msg="); i >= 0 {
			return line[i:], true
		}
		return line, true
	}
	if len(line) > 5 && line[0] == 'E' && isDigits(line[1:5]) {
		if _, msg, ok := strings.Cut(line, "] "); ok {
			return msg, true
		}
	}
	return "", false
}

func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
