// Stand-in for virt-handler, KubeVirt v1.7.0: virt-handler's REST server,
// which virt-api calls. It follows
// https://github.com/kubevirt/kubevirt/blob/v1.7.0/pkg/virt-handler/rest/lifecycle.go.

package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// virt-handler's REST server, which virt-api proxies guestosinfo, userlist
// and filesystemlist to (KubeVirt v1.7 cmd/virt-handler: the console
// server's routes; client-go kubecli/handler.go finds it). virt-api lists
// the Pods labelled kubevirt.io=virt-handler on the VMI's node in its own
// namespace and dials the Pod's IP on --console-server-port (8186 in both).
// TLS as pkg/util/tls SetupTLSForVirtHandlerServer: the server certificate
// of Secret kubevirt-virt-handler-server-certs, a client certificate
// required, verified against ConfigMap kubevirt-ca and named
// kubevirt.io:system:client:virt-handler.
const (
	handlerRESTPort       = 8186
	handlerServerCerts    = "kubevirt-virt-handler-server-certs"
	kubevirtCAConfigMap   = "kubevirt-ca"
	handlerClientCN       = "kubevirt.io:system:client:virt-handler"
	handlerContainerImage = "registry.suse.com/suse/sles/15.7/virt-handler:1.7.0-150700.3.21.1"
)

// handlerAddress is the attempt-th candidate for host's virt-handler Pod
// IP: a loopback address (the simulator's server listens there; pod IPs
// are not routed) from a hash of the host's name. Simulators sharing a
// network namespace have the same host names: the next attempt is taken
// when an address is in use (serveHandlerREST).
func handlerAddress(host string, attempt int) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(host + "/" + strconv.Itoa(attempt)))
	n := h.Sum32()%(256*254) + 256
	return fmt.Sprintf("127.52.%d.%d", n/256, n%256)
}

// handlerAttempts bounds the addresses tried for one host's server.
const handlerAttempts = 64

// handlerPod is the Pod virt-handler's DaemonSet would run on host.
func handlerPod(host string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "virt-handler-" + host, Namespace: HandlerNamespace,
			Labels: map[string]string{kubevirtv1.AppLabel: "virt-handler"}},
		Spec: corev1.PodSpec{
			NodeName:           host,
			ServiceAccountName: HandlerServiceAccount,
			Containers: []corev1.Container{{Name: "virt-handler", Image: handlerContainerImage,
				Ports: []corev1.ContainerPort{{Name: "console", ContainerPort: handlerRESTPort, Protocol: corev1.ProtocolTCP}}}},
			// A DaemonSet's Pods tolerate a host's conditions
			// (pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations).
			Tolerations: []corev1.Toleration{
				{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
				{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: "CriticalAddonsOnly", Operator: corev1.TolerationOpExists},
			},
		},
	}
}

// handlerServers are the hosts' REST servers started so far; they stop
// when done closes (the controllers' end).
type handlerServers struct {
	mu      sync.Mutex
	started map[string]string // host: the address its server listens on
	done    <-chan struct{}
}

// address is where host's server listens ("" before it started).
func (h *handlerServers) address(host string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.started[host]
}

// ensureVirtHandler gives host its virt-handler Pod and REST server.
func (s *sim) ensureVirtHandler(ctx context.Context, host string) error {
	if err := s.serveHandlerREST(ctx, host); err != nil {
		return err
	}
	pod := handlerPod(host)
	if _, err := s.kubeInformers.Core().V1().Pods().Lister().Pods(pod.Namespace).Get(pod.Name); err == nil {
		return nil
	}
	if _, err := s.kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("virt-handler: create pod of node %s: %w", host, err)
	}
	return nil
}

// serveHandlerREST starts host's server once, and the host's kubelet
// server on the same address (serveKubelet); they outlive ctx (their
// requests keep ctx's values) and stop with the controllers.
func (s *sim) serveHandlerREST(ctx context.Context, host string) error {
	h := &s.handlerREST
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started[host] != "" {
		return nil
	}
	ln, err := listenHandler(host)
	if err != nil {
		return err
	}
	addr, _, _ := net.SplitHostPort(ln.Addr().String())
	if err := s.serveKubelet(ctx, host, addr); err != nil {
		_ = ln.Close()
		return err
	}
	if h.started == nil {
		h.started = map[string]string{}
	}
	h.started[host] = addr
	base := context.WithoutCancel(ctx)
	tlsConfig := s.handlerTLS() //nolint:contextcheck // each handshake reads with its connection's context
	srv := &http.Server{Handler: s.handlerMux(host), TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	go func() {
		if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("virt-handler: REST server stopped", "node", host, "err", err)
		}
	}()
	go func() {
		<-h.done
		_ = srv.Close()
	}()
	return nil
}

// listenHandler listens on the first of host's candidate addresses that
// no other simulator in the network namespace holds.
func listenHandler(host string) (net.Listener, error) {
	var err error
	for attempt := range handlerAttempts {
		var ln net.Listener
		if ln, err = net.Listen("tcp", net.JoinHostPort(handlerAddress(host, attempt), strconv.Itoa(handlerRESTPort))); err == nil {
			return ln, nil
		}
	}
	return nil, fmt.Errorf("virt-handler: REST server of node %s: %d addresses tried, the last: %w", host, handlerAttempts, err)
}

// handlerTLS reads the server certificate and the CA at each handshake,
// as KubeVirt's certificate managers follow their Secret and ConfigMap.
func (s *sim) handlerTLS() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		ctx, cancel := context.WithTimeout(hello.Context(), 5*time.Second)
		defer cancel()
		secret, err := s.kube.CoreV1().Secrets(HandlerNamespace).Get(ctx, handlerServerCerts, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("virt-handler: server certificate: %w", err)
		}
		cert, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			return nil, fmt.Errorf("virt-handler: server certificate: %w", err)
		}
		cm, err := s.kube.CoreV1().ConfigMaps(HandlerNamespace).Get(ctx, kubevirtCAConfigMap, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("virt-handler: kubevirt CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(cm.Data["ca-bundle"])) {
			return nil, errors.New("virt-handler: kubevirt CA: no certificate in ca-bundle")
		}
		return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert},
			ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert,
			VerifyPeerCertificate: func(_ [][]byte, chains [][]*x509.Certificate) error {
				if len(chains) == 0 || chains[0][0].Subject.CommonName != handlerClientCN {
					return errors.New("common name is invalid")
				}
				return nil
			}}, nil
	}}
}

// handlerMux answers virt-handler's REST paths for the VMIs on host, from
// what the guest's agent reports.
func (s *sim) handlerMux(host string) http.Handler {
	mux := http.NewServeMux()
	const prefix = "GET /v1/namespaces/{namespace}/virtualmachineinstances/{name}/"
	serve := func(answer func(info kubevirtv1.VirtualMachineInstanceGuestAgentInfo) any) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			vmi, ok := s.handlerVMI(r.PathValue("namespace"), r.PathValue("name"), host)
			if !ok {
				http.Error(w, "VMI not found on this node", http.StatusNotFound)
				return
			}
			info := s.guestAgentInfo(vmi.Namespace, &vmi.Spec)
			info.Hostname = vmi.Spec.Hostname
			if info.Hostname == "" {
				info.Hostname = vmi.Name
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(answer(info))
		}
	}
	mux.Handle(prefix+"guestosinfo", serve(func(i kubevirtv1.VirtualMachineInstanceGuestAgentInfo) any { return i }))
	mux.Handle(prefix+"userlist", serve(func(i kubevirtv1.VirtualMachineInstanceGuestAgentInfo) any {
		return kubevirtv1.VirtualMachineInstanceGuestOSUserList{Items: i.UserList}
	}))
	mux.Handle(prefix+"filesystemlist", serve(func(i kubevirtv1.VirtualMachineInstanceGuestAgentInfo) any {
		return kubevirtv1.VirtualMachineInstanceFileSystemList{Items: i.FSInfo.Filesystems}
	}))
	return mux
}

// handlerVMI is the VMI ns/name if it runs on host (virt-handler knows only
// its own domains).
func (s *sim) handlerVMI(ns, name, host string) (*kubevirtv1.VirtualMachineInstance, bool) {
	u := getCached(s.vmis, ns, name)
	if u == nil {
		return nil, false
	}
	var vmi kubevirtv1.VirtualMachineInstance
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &vmi); err != nil || vmi.Status.NodeName != host {
		return nil, false
	}
	return &vmi, true
}
