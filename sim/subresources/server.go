// Package subresources is the simulated virt-api: KubeVirt's subresource API
// group subresources.kubevirt.io/v1, served behind the real kube-apiserver's
// aggregation layer (an APIService pointing at this server). kube-apiserver
// authenticates and authorizes each caller (RBAC on
// virtualmachines/addvolume and the others, as on Harvester) and proxies the
// request here with its front-proxy client certificate and the caller's
// identity in X-Remote-User/X-Remote-Group; this server accepts only that
// certificate. It answers as virt-api does (202, 400, 404, 409 with the same
// messages) and leaves the rest to the simulated controllers: volume requests
// land in the VM's status.volumeRequests, start/stop/restart in spec.runStrategy
// or status.stateChangeRequests.
package subresources

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/sim/loopback"
)

// The API group this server serves.
const (
	Group   = "subresources.kubevirt.io"
	Version = "v1"
	prefix  = "/apis/" + Group + "/" + Version
)

var (
	gvrVM    = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachines"}
	gvrVMI   = schema.GroupVersionResource{Group: "kubevirt.io", Version: "v1", Resource: "virtualmachineinstances"}
	gvrImage = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "virtualmachineimages"}
)

// Options configure the server.
type Options struct {
	// Config reaches the simulator's kube-apiserver as an administrator.
	Config *rest.Config
	// CertPEM and KeyPEM are the serving certificate (trusted by the
	// APIService's caBundle).
	CertPEM, KeyPEM []byte
	// RequestHeaderCAPEM verifies the aggregator's client certificate;
	// AllowedNames are the common names accepted (kube-apiserver's
	// --requestheader-allowed-names).
	RequestHeaderCAPEM []byte
	AllowedNames       []string
	Log                *slog.Logger
}

// Server is the running virt-api.
type Server struct {
	dyn  dynamic.Interface
	kube kubernetes.Interface
	log  *slog.Logger
	opts Options
	addr string
}

// Start listens on a free loopback port and serves until ctx ends.
func Start(ctx context.Context, o Options) (*Server, error) {
	dyn, err := dynamic.NewForConfig(o.Config)
	if err != nil {
		return nil, fmt.Errorf("virt-api: %w", err)
	}
	kube, err := kubernetes.NewForConfig(o.Config)
	if err != nil {
		return nil, fmt.Errorf("virt-api: %w", err)
	}
	cert, err := tls.X509KeyPair(o.CertPEM, o.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("virt-api: serving certificate: %w", err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(o.RequestHeaderCAPEM) {
		return nil, errors.New("virt-api: request-header CA: no certificate")
	}
	log := o.Log
	if log == nil {
		log = slog.Default()
	}
	s := &Server{dyn: dyn, kube: kube, log: log, opts: o}
	s.addr, err = loopback.ServeTLS(ctx, s.Handler(), &tls.Config{
		Certificates: []tls.Certificate{cert}, ClientCAs: clientCAs,
		ClientAuth: tls.VerifyClientCertIfGiven, MinVersion: tls.VersionTLS12,
	})
	if err != nil {
		return nil, fmt.Errorf("virt-api: %w", err)
	}
	return s, nil
}

// Port is the loopback port the server listens on.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.addr)
	n, _ := strconv.Atoi(p) // the listener's own address: always a number
	return n
}

// Handler routes the API: discovery and the subresources.
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok := s.caller(r)
		if !ok {
			writeStatus(w, apierrors.NewUnauthorized("the simulated virt-api accepts only requests proxied by kube-apiserver's aggregation layer"))
			return
		}
		path := strings.TrimSuffix(r.URL.Path, "/")
		switch path {
		case "/apis/" + Group:
			writeJSON(w, http.StatusOK, apiGroup())
			return
		case prefix:
			writeJSON(w, http.StatusOK, resourceList())
			return
		}
		req, err := parsePath(path)
		if err != nil {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: Group}, path))
			return
		}
		route, ok := routes[req.Resource+"/"+req.Subresource]
		if !ok {
			writeStatus(w, apierrors.NewNotFound(schema.GroupResource{Group: Group, Resource: req.Resource + "/" + req.Subresource}, req.Name))
			return
		}
		if r.Method != route.method {
			writeStatus(w, apierrors.NewMethodNotSupported(schema.GroupResource{Group: Group, Resource: req.Resource + "/" + req.Subresource}, r.Method))
			return
		}
		s.log.Info("virt-api request", "user", user, "verb", r.Method, "resource", req.Resource+"/"+req.Subresource, "namespace", req.Namespace, "name", req.Name)
		ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
		defer cancel()
		route.serve(s, ctx, w, r, req)
	})
}

// caller is the identity kube-apiserver vouches for: a client certificate
// of the request-header CA with an allowed name, and X-Remote-User.
func (s *Server) caller(r *http.Request) (string, bool) {
	if r.TLS == nil || len(r.TLS.VerifiedChains) == 0 {
		return "", false
	}
	cn := r.TLS.VerifiedChains[0][0].Subject.CommonName
	allowed := len(s.opts.AllowedNames) == 0
	for _, n := range s.opts.AllowedNames {
		allowed = allowed || n == cn
	}
	user := r.Header.Get("X-Remote-User")
	return user, allowed && user != ""
}

// request is a parsed subresource path.
type request struct {
	Namespace, Resource, Name, Subresource string
}

// parsePath reads namespaces/<ns>/<resource>/<name>/<subresource> below the
// group version.
func parsePath(path string) (request, error) {
	rest, ok := strings.CutPrefix(path, prefix+"/")
	if !ok {
		return request{}, errors.New("not in " + prefix)
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 5 || parts[0] != "namespaces" || parts[1] == "" || parts[3] == "" || parts[4] == "" {
		return request{}, errors.New("want namespaces/<namespace>/<resource>/<name>/<subresource>")
	}
	return request{Namespace: parts[1], Resource: parts[2], Name: parts[3], Subresource: parts[4]}, nil
}

type route struct {
	method string
	serve  func(s *Server, ctx context.Context, w http.ResponseWriter, r *http.Request, req request)
}

// routes are the subresources the simulator serves, by resource/subresource.
var routes = map[string]route{
	"virtualmachines/addvolume":            {http.MethodPut, (*Server).addVolume},
	"virtualmachines/removevolume":         {http.MethodPut, (*Server).removeVolume},
	"virtualmachines/start":                {http.MethodPut, (*Server).start},
	"virtualmachines/stop":                 {http.MethodPut, (*Server).stop},
	"virtualmachines/restart":              {http.MethodPut, (*Server).restart},
	"virtualmachineinstances/addvolume":    {http.MethodPut, (*Server).addVolume},
	"virtualmachineinstances/removevolume": {http.MethodPut, (*Server).removeVolume},
	"virtualmachineinstances/guestosinfo":  {http.MethodGet, (*Server).guestOSInfo},
}

func apiGroup() metav1.APIGroup {
	gv := metav1.GroupVersionForDiscovery{GroupVersion: Group + "/" + Version, Version: Version}
	return metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name: Group, Versions: []metav1.GroupVersionForDiscovery{gv}, PreferredVersion: gv}
}

// resourceList is the group version's discovery document: one entry per
// served subresource, sorted, with its verb.
func resourceList() metav1.APIResourceList {
	names := make([]string, 0, len(routes))
	for n := range routes {
		names = append(names, n)
	}
	slices.Sort(names)
	list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: Group + "/" + Version}
	for _, n := range names {
		verb := "update"
		if routes[n].method == http.MethodGet {
			verb = "get"
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: n, Namespaced: true, Verbs: metav1.Verbs{verb}})
	}
	return list
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// writeStatus answers with a Kubernetes Status, as virt-api does.
func writeStatus(w http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		st = apierrors.NewInternalError(err)
	}
	status := st.Status()
	status.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	writeJSON(w, int(status.Code), status)
}
