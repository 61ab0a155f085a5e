package sim

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/webhook"
)

// webhookProbe is the VM the simulator dry-run creates until Harvester's
// mutator is seen to mutate it.
const webhookProbe = "harvester-sim-webhook-probe"

// startWebhook serves Harvester's mutating webhook on a loopback port,
// registers it with kube-apiserver (by URL: there is no DNS in the
// simulator's network namespace) and returns once a VM create is mutated.
// The configuration lives in etcd and the server in this process, so both
// outlive a kube-apiserver restart.
func startWebhook(ctx, startCtx context.Context, cfg *rest.Config, admin adminClients, p *pki, log *slog.Logger) error {
	// virt-api's serving certificate names 127.0.0.1 and is signed by the
	// cluster CA: the webhook server shares it.
	srv, err := webhook.Start(ctx, webhook.Options{Config: cfg, CertPEM: p.VirtAPICertPEM, KeyPEM: p.VirtAPIKeyPEM, Log: log})
	if err != nil {
		return err
	}
	conf := webhook.Configuration(srv.URL(), p.CACertPEM, map[string]string{simLabel: "true"})
	if _, err := admin.kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(startCtx, conf, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("webhook: create MutatingWebhookConfiguration %s: %w", conf.Name, err)
	}
	return waitWebhookEffective(startCtx, admin.dyn)
}

// waitWebhookEffective dry-run creates a VM until kube-apiserver has
// loaded the configuration and the VM comes back mutated. Nothing can be
// watched for that, so it polls.
func waitWebhookEffective(ctx context.Context, dyn dynamic.Interface) error {
	probe := &kubevirtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: webhookProbe, Namespace: FixtureNamespace},
		Spec: kubevirtv1.VirtualMachineSpec{Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
				Resources: kubevirtv1.ResourceRequirements{Limits: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
				}},
			}},
		}},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(probe)
	if err != nil {
		return fmt.Errorf("webhook: probe VM: %w", err)
	}
	vms := dyn.Resource(kubevirtv1.GroupVersion.WithResource("virtualmachines")).Namespace(FixtureNamespace)
	var last error
	err = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		vm, err := vms.Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			last = err
			return false, nil
		}
		_, mutated, _ := unstructured.NestedString(vm.Object, "spec", "template", "spec", "domain", "resources", "requests", "memory")
		return mutated, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("webhook: a VM create is not mutated: %w (last error: %w)", err, last)
	}
	if err != nil {
		return fmt.Errorf("webhook: a VM create is not mutated: %w", err)
	}
	return nil
}
