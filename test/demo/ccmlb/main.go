// Command ccmlb plays the Harvester cloud provider of a guest cluster for
// `make demo`: with the cloud-config the guest cluster's add-ons hold (the
// Secret kube-system/harvester-cloud-config), it initialises the guest's
// nodes as the CCM does (init-nodes), creates a Service of type
// LoadBalancer in the guest and its LoadBalancer on Harvester as the CCM
// does, prints the address it gets and which component announces it, or
// deletes both again. As Harvester's admin it also creates (and deletes)
// the IP pool that harvester-bootstrap lb pool printed.
//
//	ccmlb init-nodes --guest-kubeconfig FILE
//	ccmlb create|delete --guest-kubeconfig FILE --cluster NAME [--service NS/NAME]
//	ccmlb apply-pool|delete-pool --kubeconfig HARVESTER-ADMIN-KUBECONFIG --file POOL.yaml
//	ccmlb endpoints --guest-kubeconfig FILE --service NS/NAME --node NODE --pod-ip IP
//	ccmlb ingress --guest-kubeconfig FILE --service NS/NAME
//
// The Service's ingress is kube-vip's to write (the real kube-vip, which
// harvester-sim runs for the guest's nodes): endpoints creates the
// EndpointSlice kube-vip waits for, ingress waits for what it writes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
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
	"k8s.io/client-go/util/retry"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
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
	"       ccmlb create|delete --guest-kubeconfig FILE --cluster NAME [--service NS/NAME]\n" +
	"       ccmlb apply-pool|delete-pool --kubeconfig FILE --file POOL.yaml\n" +
	"       ccmlb endpoints --guest-kubeconfig FILE --service NS/NAME --node NODE --pod-ip IP\n" +
	"       ccmlb ingress --guest-kubeconfig FILE --service NS/NAME"

func run(args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "create", "delete":
		return loadBalancer(args[0], args[1:])
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

func loadBalancer(verb string, args []string) error {
	fs := flag.NewFlagSet("ccmlb", flag.ContinueOnError)
	guestKubeconfig := fs.String("guest-kubeconfig", "", "kubeconfig of the guest cluster")
	cluster := fs.String("cluster", "", "guest cluster name (the CCM's --cluster-name)")
	service := fs.String("service", "default/web", "the guest Service NAMESPACE/NAME")
	if err := fs.Parse(args); err != nil {
		return err
	}
	svcNS, svcName, ok := strings.Cut(*service, "/")
	if *guestKubeconfig == "" || *cluster == "" || !ok {
		return errors.New("--guest-kubeconfig, --cluster and --service NS/NAME are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	guest, err := guestClient(*guestKubeconfig)
	if err != nil {
		return err
	}
	harvester, namespace, err := cloudProviderClient(ctx, guest)
	if err != nil {
		return err
	}
	if verb == "delete" {
		return deleteLoadBalancer(ctx, guest, harvester, namespace, *cluster, svcNS, svcName)
	}
	svc, err := ensureService(ctx, guest, svcNS, svcName)
	if err != nil {
		return err
	}
	l := simtest.CCMLoadBalancer(*cluster, namespace, svcNS, svcName, string(svc.UID))
	addr, err := simtest.CCMCreate(ctx, harvester, l)
	if err != nil {
		return err
	}
	fmt.Printf("Service %s of guest cluster %s -> LoadBalancer %s/%s: %s (IPPool %s, mask %s, gateway %s)\n",
		*service, *cluster, namespace, l.Name, addr.IP, addr.IPPool, addr.Mask, addr.Gateway)
	return announce(ctx, guest, svc, addr.IP)
}

// ensureService creates the guest's Service of type LoadBalancer (port 80)
// unless it exists.
func ensureService(ctx context.Context, guest kubernetes.Interface, ns, name string) (*corev1.Service, error) {
	svc, err := guest.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		svc, err = guest.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("create Service %s/%s in the guest cluster: %w", ns, name, err)
	}
	return svc, nil
}

// announce writes the address on the Service for kube-vip, as the CCM
// does, and says which component announces it. kube-vip writes the
// Service's ingress once it announces (see ingress).
func announce(ctx context.Context, guest kubernetes.Interface, svc *corev1.Service, ip string) error {
	services := guest.CoreV1().Services(svc.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := services.Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[addons.KubeVIPAddressAnnotation] = ip
		_, err = services.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("annotate Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	fmt.Printf("the cloud provider wrote %s=%s on Service %s/%s\n", addons.KubeVIPAddressAnnotation, ip, svc.Namespace, svc.Name)
	ds, err := guest.AppsV1().DaemonSets(addons.DefaultNamespace).Get(ctx, addons.KubeVIPName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		fmt.Printf("announced by: nothing (no kube-vip in %s): the address is allocated but unreachable\n", addons.DefaultNamespace)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the kube-vip DaemonSet: %w", err)
	}
	fmt.Println("announced by: " + describeKubeVIP(ds) + ", once the Service has endpoints")
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

// deleteLoadBalancer deletes the Service in the guest and its
// LoadBalancer, as the CCM does when the Service goes.
func deleteLoadBalancer(ctx context.Context, guest kubernetes.Interface, harvester dynamic.Interface, namespace, cluster, svcNS, svcName string) error {
	svc, err := guest.CoreV1().Services(svcNS).Get(ctx, svcName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read Service %s/%s: %w", svcNS, svcName, err)
	}
	l := simtest.CCMLoadBalancer(cluster, namespace, svcNS, svcName, string(svc.UID))
	if err := guest.CoreV1().Services(svcNS).Delete(ctx, svcName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Service %s/%s: %w", svcNS, svcName, err)
	}
	if err := simtest.CCMDelete(ctx, harvester, namespace, l.Name); err != nil {
		return err
	}
	fmt.Printf("Service %s/%s and LoadBalancer %s/%s deleted\n", svcNS, svcName, namespace, l.Name)
	return nil
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
