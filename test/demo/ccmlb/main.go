// Command ccmlb plays the Harvester cloud provider of a guest cluster for
// `make demo`: with the cloud-config the guest cluster's add-ons hold (the
// Secret kube-system/harvester-cloud-config), it creates the LoadBalancer
// of a Service on Harvester as the CCM does and prints the address it
// gets, or deletes it again. As Harvester's admin it also creates (and
// deletes) the IP pool that harvester-bootstrap lb pool printed.
//
//	ccmlb create|delete --guest-kubeconfig FILE --cluster NAME [--service NS/NAME]
//	ccmlb apply-pool|delete-pool --kubeconfig HARVESTER-ADMIN-KUBECONFIG --file POOL.yaml
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/lbapi"
	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// serviceUID stands in for the UID of the guest Service (no workloads run
// in the simulated guest).
const serviceUID = "5d2c3f4e-demo-4c1b-9d7e-000000000001"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ccmlb:", err)
		os.Exit(1)
	}
}

const usage = "usage: ccmlb create|delete --guest-kubeconfig FILE --cluster NAME [--service NS/NAME]\n" +
	"       ccmlb apply-pool|delete-pool --kubeconfig FILE --file POOL.yaml"

func run(args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "create", "delete":
		return loadBalancer(args[0], args[1:])
	case "apply-pool", "delete-pool":
		return pool(args[0] == "delete-pool", args[1:])
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
	harvester, namespace, err := cloudProviderClient(ctx, *guestKubeconfig)
	if err != nil {
		return err
	}
	l := simtest.CCMLoadBalancer(*cluster, namespace, svcNS, svcName, serviceUID)
	if verb == "delete" {
		if err := simtest.CCMDelete(ctx, harvester, namespace, l.Name); err != nil {
			return err
		}
		fmt.Printf("LoadBalancer %s/%s deleted\n", namespace, l.Name)
		return nil
	}
	addr, err := simtest.CCMCreate(ctx, harvester, l)
	if err != nil {
		return err
	}
	fmt.Printf("Service %s of guest cluster %s -> LoadBalancer %s/%s: %s (IPPool %s, mask %s, gateway %s)\n",
		*service, *cluster, namespace, l.Name, addr.IP, addr.IPPool, addr.Mask, addr.Gateway)
	return nil
}

// cloudProviderClient reads the cloud-config Secret from the guest cluster
// and connects to Harvester with it, in the namespace of its context.
func cloudProviderClient(ctx context.Context, guestKubeconfig string) (dynamic.Interface, string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", guestKubeconfig)
	if err != nil {
		return nil, "", err
	}
	guest, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, "", err
	}
	secret, err := guest.CoreV1().Secrets(addons.DefaultNamespace).Get(ctx, addons.DefaultCloudConfigSecret, metav1.GetOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("read the cloud-config Secret from the guest cluster: %w", err)
	}
	return simtest.CloudProviderClient(secret.Data[addons.CloudConfigKey])
}
