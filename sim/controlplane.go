package sim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/harvester-kit/harvester-machine/sim/statefile"
)

// controlPlane is the real Kubernetes control plane behind the simulator.
type controlPlane struct {
	binDir, dir string
	pki         *pki
	etcdPort    int
	peerPort    int
	apiPort     int
	kcmPort     int
	schedPort   int

	etcd, apiserver, kcm, scheduler *process
	// auditArgs turn on kube-apiserver's audit log (none: off).
	auditArgs []string
	// frozen continues a kube-apiserver stopped by freeze-apiserver.
	frozen *time.Timer
	// countRequests has each kube-apiserver's served requests read before
	// it stops (for the ledger): their sum, and whether a read failed.
	countRequests      bool
	requestsServed     float64
	requestsIncomplete bool
}

func (c *controlPlane) path(parts ...string) string {
	return filepath.Join(append([]string{c.dir}, parts...)...)
}

// URL is the kube-apiserver's address.
func (c *controlPlane) URL() string { return "https://" + hostPort(c.apiPort) }

// newControlPlane prepares the control plane's files; auditLog, when set,
// is where kube-apiserver logs every request.
func newControlPlane(binDir, dir, auditLog string) (*controlPlane, error) {
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	p, err := newPKI(time.Now())
	if err != nil {
		return nil, err
	}
	c := &controlPlane{binDir: binDir, dir: dir, pki: p,
		etcdPort: ports[0], peerPort: ports[1], apiPort: ports[2], kcmPort: ports[3], schedPort: ports[4]}
	for _, d := range []string{"pki", "logs", "etcd"} {
		if err := os.MkdirAll(c.path(d), 0o700); err != nil {
			return nil, fmt.Errorf("create state dir: %w", err)
		}
	}
	files := map[string][]byte{
		"ca.crt": p.CACertPEM, "apiserver.crt": p.ServingCertPEM, "apiserver.key": p.ServingKeyPEM,
		"sa.key": p.SAKeyPEM, "sa.pub": p.SAPubPEM,
		"front-proxy-ca.crt": p.FrontProxyCAPEM, "front-proxy-client.crt": p.ProxyClientCertPEM, "front-proxy-client.key": p.ProxyClientKeyPEM,
	}
	for name, data := range files {
		if err := os.WriteFile(c.path("pki", name), data, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := c.writeKubeconfig(c.path("kubeconfig")); err != nil {
		return nil, err
	}
	if err := statefile.WriteKubeconfig(c.path("pki", schedulerKubeconfig), *c.schedulerKubeconfig()); err != nil {
		return nil, err
	}
	if c.auditArgs, err = c.writeAuditPolicy(auditLog); err != nil {
		return nil, err
	}
	return c, nil
}

// adminKubeconfig is the admin's kubeconfig, with namespace default.
func (c *controlPlane) adminKubeconfig() *clientcmdapi.Config {
	return c.kubeconfigFor("harvester-sim", c.URL())
}

// kubeconfigFor is an admin kubeconfig for the API server at url.
func (c *controlPlane) kubeconfigFor(name, url string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: c.pki.CACertPEM}
	cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.pki.AdminCertPEM, ClientKeyData: c.pki.AdminKeyPEM}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin", Namespace: "default"}
	cfg.CurrentContext = name
	return cfg
}

func (c *controlPlane) writeKubeconfig(path string) error {
	return statefile.WriteKubeconfig(path, *c.adminKubeconfig())
}

func (c *controlPlane) startEtcd(ctx context.Context) error {
	client, peer := "http://"+hostPort(c.etcdPort), "http://"+hostPort(c.peerPort)
	var err error
	c.etcd, err = startProcess(c.binDir, c.path("logs"), "etcd",
		"--name=sim", "--data-dir="+c.path("etcd"),
		"--listen-client-urls="+client, "--advertise-client-urls="+client,
		"--listen-peer-urls="+peer, "--initial-advertise-peer-urls="+peer,
		"--initial-cluster=sim="+peer, "--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return err
	}
	return c.etcd.waitUntil(ctx, "etcd", func(ctx context.Context) error {
		return httpOK(ctx, http.DefaultClient, client+"/health")
	})
}

// apiServerArgs are the flags of a kube-apiserver on port backed by the
// simulator's etcd and PKI; extra flags follow.
func (c *controlPlane) apiServerArgs(port int, extra ...string) []string {
	return append([]string{
		"--etcd-servers=http://" + hostPort(c.etcdPort),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + c.path("pki", "apiserver.crt"),
		"--tls-private-key-file=" + c.path("pki", "apiserver.key"),
		"--client-ca-file=" + c.path("pki", "ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.path("pki", "sa.pub"),
		"--service-account-signing-key-file=" + c.path("pki", "sa.key"),
		"--authorization-mode=RBAC",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--allow-privileged=true",
		"--enable-priority-and-fairness=false",
		"--endpoint-reconciler-type=none",
		// The ServiceAccount admission plugin is on, as on Harvester: every
		// Pod gets its token volume, which KubeVirt counts on (a hot-plug
		// attachment Pod's volumes are its claims plus an emptyDir and the
		// token, volume-hotplug.go podVolumesMatchesReadyVolumes).
	}, extra...)
}

// aggregationArgs turn on the aggregation layer of the simulated
// Harvester's kube-apiserver (not the guests'): it proxies
// subresources.kubevirt.io to the simulated virt-api with its front-proxy
// client certificate and the caller in the X-Remote-* headers. An APIService
// backed by an ExternalName Service (127.0.0.1) reaches it without a
// cluster IP.
func (c *controlPlane) aggregationArgs() []string {
	return []string{
		"--requestheader-client-ca-file=" + c.path("pki", "front-proxy-ca.crt"),
		"--requestheader-allowed-names=" + ProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + c.path("pki", "front-proxy-client.crt"),
		"--proxy-client-key-file=" + c.path("pki", "front-proxy-client.key"),
	}
}

func (c *controlPlane) startAPIServer(ctx context.Context) error {
	var err error
	extra := append(c.aggregationArgs(), c.auditArgs...)
	c.apiserver, err = startProcess(c.binDir, c.path("logs"), "kube-apiserver", c.apiServerArgs(c.apiPort, extra...)...)
	if err != nil {
		return err
	}
	if err := c.waitAPIServer(ctx); err != nil {
		return err
	}
	// The pid file says which kube-apiserver is serving; it changes only once
	// a new one is ready (see RestartAPIServer).
	pid := strconv.Itoa(c.apiserver.cmd.Process.Pid) + "\n"
	return statefile.Write(c.path(APIServerPIDFile), []byte(pid))
}

func (c *controlPlane) waitAPIServer(ctx context.Context) error {
	client, err := c.adminHTTPClient()
	if err != nil {
		return err
	}
	return c.apiserver.waitUntil(ctx, "kube-apiserver", func(ctx context.Context) error {
		return httpOK(ctx, client, c.URL()+"/readyz")
	})
}

// restartAPIServer stops kube-apiserver and starts it again on the same port,
// as a fault for reliability tests.
func (c *controlPlane) restartAPIServer(ctx context.Context) error {
	c.thaw()
	c.countServed(ctx)
	c.apiserver.stop(10 * time.Second)
	return c.startAPIServer(ctx)
}

// kcmControllers are the kube-controller-manager controllers the
// simulator runs: besides those of objects (garbage collector, namespaces,
// service accounts, volumes, quotas, RBAC aggregation), those of a dead
// host: the node lifecycle controller (Ready Unknown and the unreachable
// taints once a node Lease is not renewed), the taint-eviction controller
// (deletes the pods a NoExecute taint such as out-of-service evicts) and
// pod GC (force-deletes terminating pods on a NotReady out-of-service node).
const kcmControllers = "garbagecollector,namespace,serviceaccount,serviceaccount-token,pvc-protection,pv-protection,persistentvolume-binder,resourcequota,clusterrole-aggregation," +
	"nodelifecycle,taint-eviction-controller,podgc"

// nodeMonitorPeriod is how often the node lifecycle controller checks the
// nodes for a grace period: its default 5s, shorter for short grace
// periods (at least 1s).
func nodeMonitorPeriod(grace time.Duration) time.Duration {
	return min(5*time.Second, max(time.Second, grace/8))
}

// startControllerManager starts kube-controller-manager; grace is its
// --node-monitor-grace-period (how long a node Lease may go unrenewed
// before the node is Ready Unknown).
func (c *controlPlane) startControllerManager(ctx context.Context, grace time.Duration) error {
	var err error
	c.kcm, err = c.startComponent(ctx, "kube-controller-manager", c.kcmPort,
		"--kubeconfig="+c.path("kubeconfig"),
		"--authentication-kubeconfig="+c.path("kubeconfig"),
		"--authorization-kubeconfig="+c.path("kubeconfig"),
		"--controllers="+kcmControllers,
		"--node-monitor-grace-period="+grace.String(),
		"--node-monitor-period="+nodeMonitorPeriod(grace).String(),
		"--service-account-private-key-file="+c.path("pki", "sa.key"),
		"--root-ca-file="+c.path("pki", "ca.crt"),
		"--use-service-account-credentials=false",
		"--leader-elect=false",
	)
	return err
}

// schedulerKubeconfig is the file of kube-scheduler's own credential.
const schedulerKubeconfig = "kube-scheduler.kubeconfig"

// schedulerKubeconfig reaches kube-apiserver as system:kube-scheduler.
func (c *controlPlane) schedulerKubeconfig() *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["harvester-sim"] = &clientcmdapi.Cluster{Server: c.URL(), CertificateAuthorityData: c.pki.CACertPEM}
	cfg.AuthInfos[SchedulerUser] = &clientcmdapi.AuthInfo{ClientCertificateData: c.pki.SchedulerCertPEM, ClientKeyData: c.pki.SchedulerKeyPEM}
	cfg.Contexts["harvester-sim"] = &clientcmdapi.Context{Cluster: "harvester-sim", AuthInfo: SchedulerUser}
	cfg.CurrentContext = "harvester-sim"
	return cfg
}

// startScheduler runs the real kube-scheduler (default profile,
// default-scheduler) as system:kube-scheduler: it binds the virt-launcher
// pods the simulated virt-controller creates.
func (c *controlPlane) startScheduler(ctx context.Context) error {
	kubeconfig := c.path("pki", schedulerKubeconfig)
	var err error
	c.scheduler, err = c.startComponent(ctx, "kube-scheduler", c.schedPort,
		"--kubeconfig="+kubeconfig,
		"--authentication-kubeconfig="+kubeconfig,
		"--authorization-kubeconfig="+kubeconfig,
		"--leader-elect=false",
	)
	return err
}

// startComponent starts a control-plane component serving its health on
// the loopback port and waits until /healthz answers.
func (c *controlPlane) startComponent(ctx context.Context, name string, port int, args ...string) (*process, error) {
	args = append(args, "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))
	p, err := startProcess(c.binDir, c.path("logs"), name, args...)
	if err != nil {
		return nil, err
	}
	insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // self-signed health endpoint on loopback
	return p, p.waitUntil(ctx, name, func(ctx context.Context) error {
		return httpOK(ctx, insecure, "https://"+hostPort(port)+"/healthz")
	})
}

func (c *controlPlane) stop(ctx context.Context) {
	c.thaw()
	c.countServed(context.WithoutCancel(ctx)) // the run's context is done by now
	c.scheduler.stop(5 * time.Second)
	c.kcm.stop(5 * time.Second)
	c.apiserver.stop(10 * time.Second)
	c.etcd.stop(10 * time.Second)
}

func (c *controlPlane) adminHTTPClient() (*http.Client, error) {
	cert, err := tls.X509KeyPair(c.pki.AdminCertPEM, c.pki.AdminKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("load admin certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.pki.CACertPEM)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
	}}}, nil
}

func httpOK(ctx context.Context, client *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %w: HTTP %d", url, errNotReady, resp.StatusCode)
	}
	return nil
}
