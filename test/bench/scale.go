package bench

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"kubevirt.io/client-go/kubevirt"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/staticip"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// scaleStaticFlags give the scale measurement's static machine its address.
var scaleStaticFlags = []string{"--harvester-static-address-range=10.60.7.10-10.60.7.20/24", "--harvester-static-gateway=10.60.7.1"}

// seedLabel marks the VMIs the scale measurement seeds.
const seedLabel = "bench.harvester-kit.io/seeded"

// CreateCost is what one create cost: API requests (audit log) and bytes
// the driver received from the API server (TLS included, watches too).
type CreateCost struct {
	Requests Requests
	Bytes    int64
}

// ScaleResult is the cost of one create of each kind with the namespace
// holding no other VMIs and with Opts.NamespaceVMIs of them, and what one
// list of all those VMIs transfers.
type ScaleResult struct {
	VMIs         int
	Empty, Full  map[string]CreateCost // kind ("plain", "static address") -> cost
	ListAllBytes int64
}

// scaleKinds are the machines measured: a plain one and one holding a
// static address.
var scaleKinds = []struct {
	name  string
	flags []string
}{{"plain", nil}, {"static address", scaleStaticFlags}}

// measureScale creates one machine of each kind through a byte-counting
// proxy, seeds n VMIs in the namespace (copies of the first machine's
// VMI, labelled as the driver's machines of other pools, pinned to no
// host so they stay unscheduled), and creates them again.
func (r *Result) measureScale(ctx context.Context, sim *simtest.Sim, virt kubevirt.Interface, log *auditLog, dir string) error {
	n := r.Opts.NamespaceVMIs
	if n <= 0 {
		return nil
	}
	proxy, kubeconfig, err := countingProxy(sim.Kubeconfig)
	if err != nil {
		return err
	}
	defer proxy.Close()
	s := &ScaleResult{VMIs: n, Empty: map[string]CreateCost{}, Full: map[string]CreateCost{}}
	var template *kubevirtv1.VirtualMachineInstance
	for round, costs := range []map[string]CreateCost{s.Empty, s.Full} {
		if round == 1 {
			if err := seedVMIs(ctx, virt, template, n); err != nil {
				return err
			}
			logf(r.Opts, "seeded %d VMIs", n)
		}
		for i, k := range scaleKinds {
			name := fmt.Sprintf("s%d-pool1-%05d", round, i)
			logf(r.Opts, "create cost, %d VMIs in the namespace: %s", round*n, k.name)
			cost, vmi, err := createOneCounted(ctx, sim, virt, log, proxy, kubeconfig, dir, name, k.flags)
			if err != nil {
				return err
			}
			if template == nil {
				template = vmi
			}
			costs[k.name] = cost
		}
	}
	if s.ListAllBytes, err = listAllBytes(ctx, sim); err != nil {
		return err
	}
	r.Scale = s
	return virt.KubevirtV1().VirtualMachineInstances("default").DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: seedLabel})
}

// createOneCounted creates one machine with the driver's kubeconfig
// pointing at the proxy, counts its requests and bytes, reads its VMI and
// removes it again (not counted).
func createOneCounted(ctx context.Context, sim *simtest.Sim, virt kubevirt.Interface, log *auditLog, proxy *byteProxy, kubeconfig []byte, dir, name string, flags []string) (CreateCost, *kubevirtv1.VirtualMachineInstance, error) {
	mdir := filepath.Join(dir, name)
	if err := os.MkdirAll(mdir, 0o700); err != nil {
		return CreateCost{}, nil, err
	}
	ms, err := sim.NewMachines(mdir, "scale")
	if err != nil {
		return CreateCost{}, nil, err
	}
	ms.Setenv(machineEnv...)
	ms.Setenv("HARVESTER_KUBECONFIG_CONTENT=" + base64.StdEncoding.EncodeToString(kubeconfig))
	if err := log.mark(); err != nil {
		return CreateCost{}, nil, err
	}
	proxy.received.Store(0)
	if _, err := runLines(ctx, ms, ms.CreateArgs(name, flags...), func(time.Time, string) {}); err != nil {
		return CreateCost{}, nil, err
	}
	reqs, err := log.since(driverAgent) // waits until the log settles: the connections are closed
	if err != nil {
		return CreateCost{}, nil, err
	}
	cost := CreateCost{Requests: reqs, Bytes: proxy.received.Load()}
	vmi, err := virt.KubevirtV1().VirtualMachineInstances("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return cost, nil, fmt.Errorf("read VMI %s: %w", name, err)
	}
	if _, err := runLines(ctx, ms, ms.RemoveArgs(name), func(time.Time, string) {}); err != nil {
		return cost, nil, err
	}
	return cost, vmi, nil
}

// reservedVMILabels are the labels KubeVirt sets on a VMI and refuses on
// one created by anyone else (KubeVirt v1.7.0
// pkg/virt-api/webhooks/validating-webhook/admitters/vmi-create-admitter.go,
// restrictedVmiLabels).
var reservedVMILabels = []string{
	kubevirtv1.CreatedByLabel, kubevirtv1.MigrationJobLabel, kubevirtv1.NodeNameLabel,
	kubevirtv1.MigrationTargetNodeNameLabel, kubevirtv1.NodeSchedulable, kubevirtv1.InstallStrategyLabel,
}

// seedVMIs creates n copies of the template VMI, each labelled as a
// machine of another pool of the driver and with a node selector no host
// has (so the simulator leaves them unscheduled, holding no address).
func seedVMIs(ctx context.Context, virt kubevirt.Interface, template *kubevirtv1.VirtualMachineInstance, n int) error {
	for i := range n {
		name := fmt.Sprintf("seed-pool9-%05d", i)
		vmi := &kubevirtv1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: template.Namespace, Labels: map[string]string{}, Annotations: template.Annotations},
			Spec:       *template.Spec.DeepCopy(),
		}
		for k, v := range template.Labels {
			vmi.Labels[k] = v
		}
		for _, k := range reservedVMILabels {
			delete(vmi.Labels, k)
		}
		delete(vmi.Labels, staticip.LabelRange)
		vmi.Labels[harvester.LabelMachineID] = fmt.Sprintf("seed%05d", i)
		vmi.Labels[harvester.LabelVMName] = name
		vmi.Labels[seedLabel] = "true"
		vmi.Spec.NodeSelector = map[string]string{seedLabel: "no-such-host"}
		if _, err := virt.KubevirtV1().VirtualMachineInstances(vmi.Namespace).Create(ctx, vmi, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("seed VMI %s: %w", name, err)
		}
	}
	return nil
}

// listAllBytes is the size of one list of every VMI in the namespace.
func listAllBytes(ctx context.Context, sim *simtest.Sim) (int64, error) {
	cfg, err := sim.RESTConfig()
	if err != nil {
		return 0, err
	}
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances", nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return io.Copy(io.Discard, resp.Body)
}

// byteProxy forwards TCP connections to the API server and counts the
// bytes sent back to the clients.
type byteProxy struct {
	net.Listener
	received atomic.Int64
}

// countingProxy starts a proxy in front of the API server of the
// kubeconfig at path and returns it with a copy of the kubeconfig whose
// server is the proxy (the same host, so the certificate still matches).
func countingProxy(path string) (*byteProxy, []byte, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, nil, err
	}
	var upstream *url.URL
	for _, c := range cfg.Clusters {
		if upstream, err = url.Parse(c.Server); err != nil {
			return nil, nil, err
		}
	}
	if upstream == nil {
		return nil, nil, fmt.Errorf("%s names no cluster", path)
	}
	l, err := net.Listen("tcp", net.JoinHostPort(upstream.Hostname(), "0"))
	if err != nil {
		return nil, nil, err
	}
	p := &byteProxy{Listener: l}
	go p.serve(upstream.Host)
	_, port, _ := net.SplitHostPort(l.Addr().String())
	for _, c := range cfg.Clusters {
		c.Server = "https://" + net.JoinHostPort(upstream.Hostname(), port)
	}
	out, err := clientcmd.Write(*cfg)
	return p, out, err
}

func (p *byteProxy) serve(upstream string) {
	for {
		c, err := p.Accept()
		if err != nil {
			return
		}
		go p.forward(c, upstream)
	}
}

func (p *byteProxy) forward(c net.Conn, upstream string) {
	defer c.Close()
	u, err := net.Dial("tcp", upstream)
	if err != nil {
		return
	}
	defer u.Close()
	go func() {
		_, _ = io.Copy(u, c)
		_ = u.Close()
	}()
	_, _ = io.Copy(countingWriter{c, &p.received}, u)
}

// countingWriter adds what it writes to n as it goes.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n.Add(int64(n))
	return n, err
}
