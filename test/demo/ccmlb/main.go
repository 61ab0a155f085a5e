// Command ccmlb plays the Harvester cloud provider of a guest cluster for
// `make demo`, with the cloud-config the guest cluster's add-ons hold (the
// Secret kube-system/harvester-cloud-config): it initialises the guest's
// nodes as the CCM does (init-nodes) and runs the CCM by its rules (run,
// until SIGTERM): its load-balancer half (test/simtest.ServiceController),
// its VMI controller that puts the uninitialized taint back on a guest node
// whose VM migrated to another zone or region (simtest.TopologyController)
// and the cloud node controller that initialises tainted nodes
// (simtest.CloudNodeController). The
// other verbs are what a user, the endpointslice controller and kube-vip
// do: create or delete a Service of type LoadBalancer in the guest, make
// the EndpointSlice of one ready pod (endpoints: the guest runs no pods),
// wait for the ingress the real kube-vip writes (ingress), or announce
// (kube-vip's two writes, for a demo without the real kube-vip). As
// Harvester's admin it also creates (and deletes) the IP pool that
// harvester-bootstrap lb pool printed.
//
//	ccmlb init-nodes --guest-kubeconfig FILE
//	ccmlb run --guest-kubeconfig FILE --cluster NAME
//	ccmlb create|announce|delete --guest-kubeconfig FILE [--service NS/NAME]
//	ccmlb endpoints --guest-kubeconfig FILE [--service NS/NAME] --node NODE [--pod-ip IP]
//	ccmlb ingress --guest-kubeconfig FILE [--service NS/NAME]
//	ccmlb apply-pool|delete-pool --kubeconfig HARVESTER-ADMIN-KUBECONFIG --file POOL.yaml
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"gopkg.in/yaml.v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ccmlb:", err)
		os.Exit(1)
	}
}

const usage = "usage: ccmlb init-nodes --guest-kubeconfig FILE\n" +
	"       ccmlb run --guest-kubeconfig FILE --cluster NAME\n" +
	"       ccmlb create|announce|delete --guest-kubeconfig FILE [--service NS/NAME]\n" +
	"       ccmlb endpoints --guest-kubeconfig FILE [--service NS/NAME] --node NODE [--pod-ip IP]\n" +
	"       ccmlb ingress --guest-kubeconfig FILE [--service NS/NAME]\n" +
	"       ccmlb apply-pool|delete-pool --kubeconfig FILE --file POOL.yaml"

func run(args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "run":
		return runCCM(args[1:])
	case "create", "announce", "delete":
		return service(args[0], args[1:])
	case "init-nodes":
		return initNodes(args[1:])
	case "apply-pool", "delete-pool":
		return pool(args[0] == "delete-pool", args[1:])
	case "endpoints":
		return endpoints(args[1:])
	case "ingress":
		return ingress(args[1:])
	}
	return errors.New(usage)
}

// pool creates or deletes the IPPool in file as Harvester's admin.
func pool(remove bool, args []string) error {
	fs := flag.NewFlagSet("ccmlb pool", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "Harvester admin kubeconfig")
	file := fs.String("file", "", "IPPool YAML (harvester-bootstrap lb pool)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	data, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	var u unstructured.Unstructured
	if err := yaml.Unmarshal(data, &u.Object); err != nil {
		return fmt.Errorf("%s: %w", *file, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pools := dyn.Resource(schema.GroupVersionResource{Group: lbapi.Group, Version: lbapi.Version, Resource: "ippools"})
	if remove {
		if err := pools.Delete(ctx, u.GetName(), metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete IPPool %s: %w", u.GetName(), err)
		}
		fmt.Printf("IPPool %s deleted\n", u.GetName())
		return nil
	}
	if _, err := pools.Create(ctx, &u, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create IPPool %s: %w", u.GetName(), err)
	}
	fmt.Printf("IPPool %s created\n", u.GetName())
	return nil
}

// runCCM runs the cloud provider's service controller, VMI (topology)
// controller and cloud node controller against the guest until SIGTERM or
// SIGINT, printing each sync, clean-up, taint and initialisation.
func runCCM(args []string) error {
	fs := flag.NewFlagSet("ccmlb run", flag.ContinueOnError)
	guestKubeconfig := fs.String("guest-kubeconfig", "", "kubeconfig of the guest cluster")
	cluster := fs.String("cluster", "", "guest cluster name (the CCM's --cluster-name)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *guestKubeconfig == "" || *cluster == "" {
		return errors.New("--guest-kubeconfig and --cluster are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	guest, err := guestClient(*guestKubeconfig)
	if err != nil {
		return err
	}
	harvester, namespace, err := cloudProviderClient(ctx, guest)
	if err != nil {
		return err
	}
	logf := func(format string, a ...any) { fmt.Printf("cloud provider: "+format+"\n", a...) }
	onErr := func(err error) { fmt.Fprintln(os.Stderr, "cloud provider:", err) }
	sc := &simtest.ServiceController{
		CCM: &simtest.CCM{Harvester: harvester, Namespace: namespace, Cluster: *cluster}, Guest: guest,
		Log: logf, OnError: onErr,
	}
	if err := sc.Run(ctx); err != nil {
		return err
	}
	nodeToVM := &sync.Map{}
	nc := &simtest.CloudNodeController{Guest: guest, Harvester: harvester, Namespace: namespace, NodeToVM: nodeToVM, Log: logf, OnError: onErr}
	if err := nc.Run(ctx); err != nil {
		return err
	}
	tc := &simtest.TopologyController{Harvester: harvester, Namespace: namespace, Cluster: *cluster, Guest: guest, NodeToVM: nodeToVM, Log: logf, OnError: onErr}
	if err := tc.Run(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// service creates, announces (as kube-vip) or deletes the guest Service.
func service(verb string, args []string) error {
	fs := flag.NewFlagSet("ccmlb "+verb, flag.ContinueOnError)
	guestKubeconfig := fs.String("guest-kubeconfig", "", "kubeconfig of the guest cluster")
	name := fs.String("service", "default/web", "the guest Service NAMESPACE/NAME")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ns, svcName, ok := strings.Cut(*name, "/")
	if *guestKubeconfig == "" || !ok {
		return errors.New("--guest-kubeconfig and --service NS/NAME are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	guest, err := guestClient(*guestKubeconfig)
	if err != nil {
		return err
	}
	switch verb {
	case "create":
		return createService(ctx, guest, ns, svcName)
	case "announce":
		return announce(ctx, guest, ns, svcName)
	}
	return deleteService(ctx, guest, ns, svcName)
}

// createService creates the guest's Service of type LoadBalancer (port 80)
// and waits for the address the cloud provider writes on it.
func createService(ctx context.Context, guest kubernetes.Interface, ns, name string) error {
	if _, err := guest.CoreV1().Services(ns).Create(ctx, simtest.LoadBalancerService(ns, name, ""), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Service %s/%s in the guest cluster: %w", ns, name, err)
	}
	k := kubeapi.KindOf[*corev1.ServiceList]("Service", &corev1.Service{}, guest.CoreV1().Services(ns))
	svc, err := kubeapi.Wait(ctx, k, ns, name, 0, func(s *corev1.Service) (bool, error) {
		return s != nil && s.Annotations[addons.KubeVIPAddressAnnotation] != "", nil
	})
	if err != nil {
		return fmt.Errorf("the cloud provider wrote no address on Service %s/%s: %w", ns, name, err)
	}
	fmt.Printf("Service %s/%s (UID %s): the cloud provider wrote %s=%s for kube-vip\n", ns, name, svc.UID,
		addons.KubeVIPAddressAnnotation, svc.Annotations[addons.KubeVIPAddressAnnotation])
	return nil
}

// announce says which component announces the Service's address and plays
// kube-vip's writes: its vipHost annotation, then the ingress (no pods run
// in the simulated guest).
func announce(ctx context.Context, guest kubernetes.Interface, ns, name string) error {
	ds, err := guest.AppsV1().DaemonSets(addons.DefaultNamespace).Get(ctx, addons.KubeVIPName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fmt.Printf("announced by: nothing (no kube-vip in %s): the address is allocated but unreachable\n", addons.DefaultNamespace)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the kube-vip DaemonSet: %w", err)
	}
	fmt.Println("announced by: " + describeKubeVIP(ds))
	nodes, err := guest.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the guest's nodes (kube-vip's vipHost): %w", err)
	}
	if len(nodes.Items) == 0 {
		return errors.New("the guest cluster has no node to announce from")
	}
	ip, err := simtest.AnnounceAsKubeVIP(ctx, guest, ns, name, nodes.Items[0].Name)
	if err != nil {
		return err
	}
	fmt.Printf("Service %s/%s: annotation %s=%s, then status.loadBalancer.ingress %s (the stand-in writes both as kube-vip does;\n"+
		"  the ingress is a status change, which starts no sync of the cloud provider)\n", ns, name, simtest.AnnotationKubeVIPHost, nodes.Items[0].Name, ip)
	return nil
}

// deleteService deletes the guest Service and waits until it is gone (the
// cloud provider drops its finalizer whether or not it deleted the
// LoadBalancer).
func deleteService(ctx context.Context, guest kubernetes.Interface, ns, name string) error {
	if err := guest.CoreV1().Services(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s/%s: %w", ns, name, err)
	}
	k := kubeapi.KindOf[*corev1.ServiceList]("Service", &corev1.Service{}, guest.CoreV1().Services(ns))
	if _, err := kubeapi.Wait(ctx, k, ns, name, 0, func(s *corev1.Service) (bool, error) { return s == nil, nil }); err != nil {
		return fmt.Errorf("wait for Service %s/%s to go: %w", ns, name, err)
	}
	fmt.Printf("Service %s/%s deleted from the guest cluster\n", ns, name)
	return nil
}

// describeKubeVIP says how kube-vip announces: where it runs, ARP on
// which interface, with which Service settings.
func describeKubeVIP(ds *appsv1.DaemonSet) string {
	env := map[string]string{}
	c := ds.Spec.Template.Spec.Containers[0]
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	iface := env[addons.KubeVIPEnvInterface]
	if iface == "" {
		iface = "the interface kube-vip detects"
	}
	where := "on control-plane nodes"
	if ds.Spec.Template.Spec.Affinity == nil {
		where = "on every node"
	}
	return fmt.Sprintf("kube-vip (DaemonSet %s/%s, %s, %s), by ARP on %s, %s=%s %s=%s",
		ds.Namespace, ds.Name, c.Image, where, iface,
		addons.KubeVIPEnvSvcEnable, env[addons.KubeVIPEnvSvcEnable], addons.KubeVIPEnvSvcElection, env[addons.KubeVIPEnvSvcElection])
}

// initNodes initialises every node of the guest cluster as the CCM does.
func initNodes(args []string) error {
	fs := flag.NewFlagSet("ccmlb init-nodes", flag.ContinueOnError)
	guestKubeconfig := fs.String("guest-kubeconfig", "", "kubeconfig of the guest cluster")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *guestKubeconfig == "" {
		return errors.New("--guest-kubeconfig is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	guest, err := guestClient(*guestKubeconfig)
	if err != nil {
		return err
	}
	hv, namespace, err := cloudProviderClient(ctx, guest)
	if err != nil {
		return err
	}
	nodes, err := simtest.CCMInitNodes(ctx, guest, hv, namespace)
	if err != nil {
		return err
	}
	for _, n := range nodes {
		fmt.Printf("node %s initialised: providerID %s, zone %s, region %s, %d taints left\n", n.Name, n.Spec.ProviderID,
			n.Labels[harvester.ZoneKey], n.Labels[harvester.RegionKey], len(n.Spec.Taints))
	}
	return nil
}

func guestClient(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}

// cloudProviderClient reads the cloud-config Secret from the guest cluster
// and connects to Harvester with it, in the namespace of its context.
func cloudProviderClient(ctx context.Context, guest kubernetes.Interface) (dynamic.Interface, string, error) {
	secret, err := guest.CoreV1().Secrets(addons.DefaultNamespace).Get(ctx, addons.DefaultCloudConfigSecret, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("read the cloud-config Secret from the guest cluster: %w", err)
	}
	return simtest.CloudProviderClient(secret.Data[addons.CloudConfigKey])
}
