// Package webhook is Harvester's admission webhooks as the simulator serves
// them: an HTTPS server kube-apiserver calls for admission.k8s.io/v1
// AdmissionReviews, registered as Harvester registers its own (names and
// path of Harvester v1.8's webhook server). It plays the resource part of
// the VM mutator (sim/hv.MutateResources); the rest of
// Harvester's mutator is not played.
package webhook

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/sim/loopback"
)

// Harvester v1.8's names for its mutating webhook (pkg/webhook/types.go,
// pkg/webhook/server/server.go).
const (
	// ConfigurationName is the MutatingWebhookConfiguration.
	ConfigurationName = "harvester-mutator"
	// WebhookName is its one webhook.
	WebhookName = "mutator.harvesterhci.io"
	// MutationPath is where the server answers mutation reviews.
	MutationPath = "/v1/webhook/mutation"
)

// Options configure the server.
type Options struct {
	// Config reaches the simulator's kube-apiserver as an administrator
	// (the settings are read through it).
	Config *rest.Config
	// CertPEM and KeyPEM are the serving certificate; it must name
	// 127.0.0.1, the address kube-apiserver dials.
	CertPEM, KeyPEM []byte
	Log             *slog.Logger
}

// Server is the running webhook server.
type Server struct {
	addr string
}

// Start watches the settings, listens on a free loopback port and serves
// until ctx ends. It returns once the settings are read.
func Start(ctx context.Context, o Options) (*Server, error) {
	cert, err := tls.X509KeyPair(o.CertPEM, o.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("webhook: serving certificate: %w", err)
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	settings, err := watchSettings(ctx, o.Config)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle(MutationPath, NewMutator(settings, log))
	addr, err := loopback.ServeTLS(ctx, mux, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	return &Server{addr: addr}, nil
}

// URL is where kube-apiserver reaches the mutator.
func (s *Server) URL() string {
	return "https://" + s.addr + MutationPath
}
