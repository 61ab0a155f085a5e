// Package loopback serves the simulator's HTTPS endpoints that
// kube-apiserver calls (the simulated virt-api, Harvester's webhook) on a
// free port of 127.0.0.1.
package loopback

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"time"
)

// ServeTLS listens on a free loopback port and serves h with tlsConfig
// until ctx ends (then shuts down within 5 s). It returns the address.
func ServeTLS(ctx context.Context, h http.Handler, tlsConfig *tls.Config) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tlsConfig}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	return ln.Addr().String(), nil
}
