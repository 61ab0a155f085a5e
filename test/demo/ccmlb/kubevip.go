package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/harvester-kit/harvester-machine/test/simtest"
)

// serviceFlags parses --guest-kubeconfig, --service and the extra flags.
func serviceFlags(name string, args []string, extra func(*flag.FlagSet)) (kubeconfig, ns, svc string, err error) {
	fs := flag.NewFlagSet("ccmlb "+name, flag.ContinueOnError)
	kc := fs.String("guest-kubeconfig", "", "kubeconfig of the guest cluster")
	service := fs.String("service", "default/web", "the guest Service NAMESPACE/NAME")
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return "", "", "", err
	}
	ns, svc, ok := strings.Cut(*service, "/")
	if *kc == "" || !ok {
		return "", "", "", errors.New("--guest-kubeconfig and --service NS/NAME are required")
	}
	return *kc, ns, svc, nil
}

// endpoints creates the EndpointSlice the endpointslice controller makes
// for the Service with one ready pod (IP on node): the simulated guest runs
// no pods, and kube-vip announces only a Service with endpoints.
func endpoints(args []string) error {
	var node, podIP string
	kc, ns, name, err := serviceFlags("endpoints", args, func(fs *flag.FlagSet) {
		fs.StringVar(&node, "node", "", "the node the pod runs on")
		fs.StringVar(&podIP, "pod-ip", "10.42.0.10", "the pod's address")
	})
	if err != nil {
		return err
	}
	if node == "" {
		return errors.New("--node is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	guest, err := guestClient(kc)
	if err != nil {
		return err
	}
	svc, err := guest.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read Service %s/%s: %w", ns, name, err)
	}
	var ports []discoveryv1.EndpointPort
	for _, p := range svc.Spec.Ports {
		ports = append(ports, discoveryv1.EndpointPort{Name: ptr.To(p.Name), Port: ptr.To(p.Port), Protocol: ptr.To(corev1.ProtocolTCP)})
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-", Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{podIP}, NodeName: ptr.To(node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}}},
		Ports: ports,
	}
	created, err := guest.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the EndpointSlice of Service %s/%s: %w", ns, name, err)
	}
	fmt.Printf("EndpointSlice %s/%s: pod %s on %s, ready (the guest runs no pods: this is what the endpointslice controller makes for one ready pod)\n",
		ns, created.Name, podIP, node)
	return nil
}

// ingress waits until kube-vip has written the Service's ingress and
// prints it with the node announcing it.
func ingress(args []string) error {
	kc, ns, name, err := serviceFlags("ingress", args, nil)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	guest, err := guestClient(kc)
	if err != nil {
		return err
	}
	var svc *corev1.Service
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		svc, err = guest.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && len(svc.Status.LoadBalancer.Ingress) > 0, nil
	})
	if err != nil {
		return fmt.Errorf("no ingress on Service %s/%s within a minute: is kube-vip running (harvester-sim status)?", ns, name)
	}
	var ips []string
	for _, i := range svc.Status.LoadBalancer.Ingress {
		ips = append(ips, i.IP)
	}
	fmt.Printf("Service %s/%s status.loadBalancer.ingress: %s, written by kube-vip on node %s (%s)\n",
		ns, name, strings.Join(ips, ","), svc.Annotations[simtest.AnnotationKubeVIPHost], simtest.AnnotationKubeVIPHost)
	return nil
}
