package hwebhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Service plays what kube-proxy does for Service harvester-webhook on
// Harvester (port 443 to the Pod's 9443): it listens on port 443 of an
// address of its own in 127.0.0.0/8 and forwards each connection, TLS
// untouched, to the webhook's port on 127.0.0.1. An address of its own,
// not 127.0.0.1: two simulators may share a network namespace (the tests
// run several), and Harvester's configurations name port 443.
type Service struct {
	ln     net.Listener
	target string
}

// ListenService picks a free address 127.x.y.z:443 and forwards it to
// 127.0.0.1:targetPort until ctx ends.
func ListenService(ctx context.Context, targetPort int) (*Service, error) {
	var ln net.Listener
	var err error
	for range 20 {
		ip := net.IPv4(127, byte(1+rand.IntN(254)), byte(rand.IntN(256)), byte(1+rand.IntN(254)))
		ln, err = net.Listen("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(ServicePort)))
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	if errors.Is(err, syscall.EACCES) {
		return nil, fmt.Errorf("harvester-webhook: Service %s: %w: Harvester registers its webhook on port %d; "+
			"run harvester-sim as root or give it CAP_NET_BIND_SERVICE", ServiceName, err, ServicePort)
	}
	if err != nil {
		return nil, fmt.Errorf("harvester-webhook: Service %s: %w", ServiceName, err)
	}
	s := &Service{ln: ln, target: net.JoinHostPort("127.0.0.1", strconv.Itoa(targetPort))}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	go s.serve()
	return s, nil
}

// IP is the Service's address: the ExternalName kube-apiserver dials.
func (s *Service) IP() string { return s.ln.Addr().(*net.TCPAddr).IP.String() }

func (s *Service) serve() {
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		go s.forward(conn)
	}
}

// forward copies both ways until either side ends.
func (s *Service) forward(in net.Conn) {
	defer in.Close()
	out, err := net.DialTimeout("tcp", s.target, 5*time.Second)
	if err != nil {
		return // as a Service whose Pod does not answer: the connection closes
	}
	defer out.Close()
	var once sync.Once
	done := make(chan struct{})
	stop := func() { once.Do(func() { close(done) }) }
	go func() { _, _ = io.Copy(out, in); stop() }()
	go func() { _, _ = io.Copy(in, out); stop() }()
	<-done
}
