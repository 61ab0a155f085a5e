package kubevip

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/harvester-kit/harvester-machine/sim/podenv"
)

// Binary is kube-vip's file name in the simulator's --bin-dir (built by
// `make tools` from test/tools/kubevip).
const Binary = "kube-vip"

// Runner runs the guest clusters' kube-vip processes.
type Runner struct {
	binDir string
	exe    string // harvester-sim itself (ExecCommand)
	log    *slog.Logger

	mu       sync.Mutex
	clusters map[string]*clusterRun
}

// NewRunner returns a Runner taking kube-vip from binDir.
func NewRunner(binDir string, log *slog.Logger) (*Runner, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("kube-vip runner: %w", err)
	}
	return &Runner{binDir: binDir, exe: exe, log: log, clusters: map[string]*clusterRun{}}, nil
}

// clusterRun watches one guest cluster's Nodes and kube-vip DaemonSet and
// keeps one kube-vip per node the DaemonSet schedules on.
type clusterRun struct {
	r       *Runner
	name    string
	dir     string // DIR/guests/<cluster>
	kube    kubernetes.Interface
	cfg     *rest.Config
	cancel  context.CancelFunc
	done    chan struct{}
	kick    chan struct{}
	nodes   map[string]*nodeProc
	factory informers.SharedInformerFactory
}

// Start begins running kube-vip for guest cluster (API server cfg, files
// in dir) until Stop.
func (r *Runner) Start(ctx context.Context, cluster, dir string, cfg *rest.Config) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clusters[cluster] != nil {
		return nil
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("kube-vip for guest cluster %s: %w", cluster, err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &clusterRun{r: r, name: cluster, dir: dir, kube: kube, cfg: cfg, cancel: cancel, done: make(chan struct{}),
		kick: make(chan struct{}, 1), nodes: map[string]*nodeProc{},
		factory: informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(metav1.NamespaceAll))}
	kickFn := func(any) { c.poke() }
	handler := cache.ResourceEventHandlerFuncs{AddFunc: kickFn, UpdateFunc: func(_, o any) { kickFn(o) }, DeleteFunc: kickFn}
	if _, err := c.factory.Core().V1().Nodes().Informer().AddEventHandler(handler); err != nil {
		cancel()
		return err
	}
	if _, err := c.factory.Apps().V1().DaemonSets().Informer().AddEventHandler(handler); err != nil {
		cancel()
		return err
	}
	c.factory.Start(ctx.Done())
	r.clusters[cluster] = c
	go c.loop(ctx)
	return nil
}

// Stop ends guest cluster's kube-vip processes and their namespaces.
func (r *Runner) Stop(cluster string) {
	r.mu.Lock()
	c := r.clusters[cluster]
	delete(r.clusters, cluster)
	r.mu.Unlock()
	if c != nil {
		c.cancel()
		<-c.done
	}
}

// StopAll ends every guest cluster's kube-vip.
func (r *Runner) StopAll() {
	r.mu.Lock()
	var names []string
	for n := range r.clusters {
		names = append(names, n)
	}
	r.mu.Unlock()
	for _, n := range names {
		r.Stop(n)
	}
}

func (c *clusterRun) poke() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *clusterRun) loop(ctx context.Context) {
	defer close(c.done)
	defer func() {
		var wg sync.WaitGroup
		for _, p := range c.nodes {
			wg.Add(1)
			go func() { defer wg.Done(); p.stop() }()
		}
		wg.Wait()
	}()
	c.factory.WaitForCacheSync(ctx.Done())
	for {
		if err := c.sync(ctx); err != nil && ctx.Err() == nil {
			c.r.log.Warn("kube-vip sync failed", "cluster", c.name, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
		}
	}
}

// sync starts kube-vip on each Ready node the DaemonSet schedules on and
// stops it elsewhere; a changed pod template or node address restarts it.
func (c *clusterRun) sync(ctx context.Context) error {
	ds, err := c.factory.Apps().V1().DaemonSets().Lister().DaemonSets(metav1.NamespaceSystem).Get(DaemonSetName)
	if apierrors.IsNotFound(err) {
		c.stopExcept(nil)
		return nil
	}
	if err != nil {
		return err
	}
	nodes, err := c.factory.Core().V1().Nodes().Lister().List(everything())
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, n := range nodes {
		ip := internalIP(n)
		dir := filepath.Join(c.dir, Dir, n.Name)
		if ok, why := Schedulable(ds, n); !ok || ip == "" || !ready(n) {
			if !ok {
				writeNotRun(dir, n.Name, "not scheduled: "+why)
			}
			continue
		}
		want[n.Name] = true
		key := TemplateHash(ds) + "/" + ip
		if p := c.nodes[n.Name]; p != nil && p.key == key {
			continue
		}
		if p := c.nodes[n.Name]; p != nil {
			p.stop()
			delete(c.nodes, n.Name)
		}
		s, err := c.spec(ctx, ds, n, ip, dir)
		if err != nil {
			writeNotRun(dir, n.Name, err.Error())
			c.r.log.Warn("kube-vip not run", "cluster", c.name, "node", n.Name, "err", err)
			continue
		}
		c.nodes[n.Name] = startNode(ctx, s, key)
	}
	c.stopExcept(want)
	return nil
}

func (c *clusterRun) stopExcept(want map[string]bool) {
	for name, p := range c.nodes {
		if !want[name] {
			p.stop()
			delete(c.nodes, name)
		}
	}
}

// writeNotRun records why a node has no kube-vip.
func writeNotRun(dir, node, why string) {
	if os.MkdirAll(dir, 0o700) == nil {
		_ = writeState(dir, State{Node: node, Phase: "not-run", Reason: why})
	}
}

// spec is the node's kube-vip: the DaemonSet's container with the downward
// API's values for this node, in-cluster configuration for the guest's
// `kubernetes` Service, and a token of the DaemonSet's ServiceAccount.
func (c *clusterRun) spec(ctx context.Context, ds *appsv1.DaemonSet, n *corev1.Node, ip, dir string) (spec, error) {
	binary := filepath.Join(c.r.binDir, Binary)
	if _, err := os.Stat(binary); err != nil {
		return spec{}, fmt.Errorf("no kube-vip binary at %s: build it with `make tools` (test/tools/kubevip)", binary)
	}
	ctr, err := Container(ds)
	if err != nil {
		return spec{}, err
	}
	argv, err := Argv(ctr, binary)
	if err != nil {
		return spec{}, err
	}
	sa := ds.Spec.Template.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	pod := PodInfo{Name: PodName(ds, n.Name), Namespace: ds.Namespace, NodeName: n.Name, HostIP: ip, ServiceAccount: sa}
	env, err := Environment(ctr, pod)
	if err != nil {
		return spec{}, err
	}
	svc, err := c.kube.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return spec{}, fmt.Errorf("the guest's kubernetes Service: %w", err)
	}
	api, err := serviceAddr(svc)
	if err != nil {
		return spec{}, err
	}
	target, err := url.Parse(c.cfg.Host)
	if err != nil {
		return spec{}, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "serviceaccount"), 0o700); err != nil {
		return spec{}, err
	}
	return spec{
		cluster: c.name, node: n.Name, pod: pod.Name, nodeIP: ip, dir: dir, exe: c.r.exe,
		argv: argv, env: append(RuntimeEnv(n.Name, api), env...), api: api, apiTarget: target.Host,
		refreshToken: func(ctx context.Context) error {
			return c.writeServiceAccount(ctx, ds.Namespace, sa, filepath.Join(dir, "serviceaccount"))
		},
		reportPod: func(ctx context.Context, st State) error {
			return c.reportPod(ctx, BuildPod(ds, n.Name), PodStatus(st, ctr.Name, ctr.Image, ip))
		},
		removePod: func(ctx context.Context) error {
			err := c.kube.CoreV1().Pods(ds.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		},
		log: c.r.log,
	}, nil
}

// reportPod creates the daemon pod when it is missing and sets its status
// as the kubelet reports it.
func (c *clusterRun) reportPod(ctx context.Context, pod *corev1.Pod, status corev1.PodStatus) error {
	pods := c.kube.CoreV1().Pods(pod.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cur, err = pods.Create(ctx, pod, metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		status.StartTime = cur.Status.StartTime
		if status.StartTime == nil {
			status.StartTime = ptr.To(metav1.Now())
		}
		cur.Status = status
		if _, err := pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		return nil
	})
}

// RuntimeEnv is what the container runtime and the kubelet add to a
// container's environment: PATH, HOSTNAME (the node's, with hostNetwork),
// HOME (the image has no /etc/passwd: /) and the `kubernetes` Service's
// variables.
func RuntimeEnv(hostname string, api netip.AddrPort) []string {
	host, port := api.Addr().String(), strconv.Itoa(int(api.Port()))
	tcp := "tcp://" + api.String()
	return []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME=" + hostname, "HOME=/",
		"KUBERNETES_SERVICE_HOST=" + host, "KUBERNETES_SERVICE_PORT=" + port, "KUBERNETES_SERVICE_PORT_HTTPS=" + port,
		"KUBERNETES_PORT=" + tcp, "KUBERNETES_PORT_" + port + "_TCP=" + tcp, "KUBERNETES_PORT_" + port + "_TCP_PROTO=tcp",
		"KUBERNETES_PORT_" + port + "_TCP_PORT=" + port, "KUBERNETES_PORT_" + port + "_TCP_ADDR=" + host,
	}
}

func serviceAddr(svc *corev1.Service) (netip.AddrPort, error) {
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil || len(svc.Spec.Ports) == 0 {
		return netip.AddrPort{}, fmt.Errorf("the guest's kubernetes Service has no address and port (%q)", svc.Spec.ClusterIP)
	}
	return netip.AddrPortFrom(ip, uint16(svc.Spec.Ports[0].Port)), nil
}

// writeServiceAccount writes what a pod's projected ServiceAccount volume
// holds: a token of the ServiceAccount (TokenRequest, one hour, as the
// kubelet asks), the cluster's CA and the namespace.
func (c *clusterRun) writeServiceAccount(ctx context.Context, ns, sa, dir string) error {
	tr, err := c.kube.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(tokenTTL.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("token for ServiceAccount %s/%s: %w", ns, sa, err)
	}
	ca := c.cfg.CAData
	if len(ca) == 0 && c.cfg.CAFile != "" {
		if ca, err = os.ReadFile(c.cfg.CAFile); err != nil {
			return err
		}
	}
	if len(ca) == 0 {
		return errors.New("the guest API server's CA is unknown")
	}
	return podenv.Write(dir, ns, []byte(tr.Status.Token), ca)
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func everything() labels.Selector { return labels.Everything() }
