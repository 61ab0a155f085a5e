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
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/harvester-kit/harvester-machine/sim/hwebhook"
)

// HarvesterWebhookDir is the state directory's folder of Harvester's
// webhook: its ServiceAccount files and kubeconfig.
const HarvesterWebhookDir = "harvester-webhook"

// webhookProbe is the VM the simulator dry-run creates until Harvester's
// mutator is seen to mutate it.
const webhookProbe = "harvester-sim-webhook-probe"

// harvesterWebhookRun is Harvester's webhook as the simulator runs it
// (see sim/hwebhook), restarted as the kubelet restarts a Pod's container
// (Harvester's webhook also exits on purpose, to restart, when the kube-ovn
// subnets CRD comes or goes).
type harvesterWebhookRun struct{ podRun }

// start runs bin/harvester-webhook: once kube-apiserver serves (apiReady)
// it creates the webhook's ServiceAccount, binding and Service (served
// until ctx ends) and writes its Pod files; once the CRDs its caches watch
// are established (crds) it starts the process, then waits until
// Harvester's two configurations are registered (15 s after its start:
// Harvester's own wait) and a VM create comes back mutated.
func (h *harvesterWebhookRun) start(ctx, startCtx context.Context, c *controlPlane, admin adminClients, apiReady, crds <-chan struct{}, log *slog.Logger) error {
	begin := time.Now()
	select {
	case <-apiReady:
	case <-startCtx.Done():
		return startCtx.Err()
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	svc, err := hwebhook.ListenService(ctx, ports[0])
	if err != nil {
		return err
	}
	if err := createSystemNamespace(startCtx, admin); err != nil {
		return err
	}
	o := hwebhook.Options{Dir: c.path(HarvesterWebhookDir), Namespace: SystemNamespace, APIServer: c.URL(),
		CACert: c.pki.CACertPEM, Kube: admin.kube, Labels: map[string]string{simLabel: "true"}}
	if err := hwebhook.Prepare(startCtx, o, svc.IP()); err != nil {
		return err
	}
	select {
	case <-crds:
	case <-startCtx.Done():
		return startCtx.Err()
	}
	pc, err := runPodContainer(hwebhook.Binary, func() (*process, error) {
		return startInPod(c.binDir, c.path("logs"), hwebhook.Binary, o.ServiceAccountDir(), nil, o.Args(ports[0])...)
	}, log)
	if err != nil {
		return err
	}
	h.set(pc)
	log.Debug("harvester-webhook started", "service", svc.IP(), "after", time.Since(begin).Round(time.Millisecond))
	if err := pc.waitStarted(func() error { return hwebhook.WaitRegistered(startCtx, admin.kube) }); err != nil {
		return err
	}
	log.Debug("Harvester's webhook configurations registered", "after", time.Since(begin).Round(time.Millisecond))
	return waitWebhookEffective(startCtx, admin.dyn)
}

// waitWebhookEffective dry-run creates a VM until kube-apiserver calls
// Harvester's mutator and the VM comes back mutated. Nothing can be
// watched for that, so it polls. The probe has a CPU topology, as every
// VM Harvester's UI makes: without domain.cpu, Harvester's own patch
// (maxSockets replaced before the default topology) does not apply and
// the create fails.
func waitWebhookEffective(ctx context.Context, dyn dynamic.Interface) error {
	halted := kubevirtv1.RunStrategyHalted // KubeVirt's validator wants a run strategy
	probe := &kubevirtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Name: webhookProbe, Namespace: FixtureNamespace},
		Spec: kubevirtv1.VirtualMachineSpec{RunStrategy: &halted, Template: &kubevirtv1.VirtualMachineInstanceTemplateSpec{
			Spec: kubevirtv1.VirtualMachineInstanceSpec{Domain: kubevirtv1.DomainSpec{
				CPU: &kubevirtv1.CPU{Cores: 1},
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

// createSystemNamespace creates harvester-system, which installCore makes
// too, meanwhile: Harvester's processes start before it.
func createSystemNamespace(ctx context.Context, admin adminClients) error {
	var err error
	for _, ns := range simNamespaces() {
		if ns.Name == SystemNamespace {
			_, err = admin.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		}
	}
	return createIfMissing(err, "namespace "+SystemNamespace)
}
