package capacity

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

// vmAsk is what a machine asks of its namespace's resource quotas.
type vmAsk struct {
	// objects are what the create makes, directly or through Harvester and
	// KubeVirt, each with what quota admission charges it.
	objects []quotaObject
	// requests and limits of the virt-launcher pod, as quota admission
	// sums them: the VM as Harvester's mutator leaves it, plus KubeVirt's
	// overhead, plus its sidecars.
	requests, limits corev1.ResourceList
	launcherOverhead resource.Quantity
	sidecars         []sidecar
	// Harvester's project-quota rule: the VM's limits, the memory with the
	// overhead of a VMI that has only those limits.
	ruleCPU, ruleMemory, ruleOverhead resource.Quantity
	storage                           resource.Quantity // requests.storage of every volume
}

// sidecar is a container of the launcher pod besides the VM's, and what
// quota admission charges for it.
type sidecar struct {
	name  string
	usage corev1.ResourceList
}

// quotaObject is one object a create makes and its quota usage. A pod or
// a claim is matched against a quota's scopes as admission matches it;
// any other object only counts against quotas without scopes.
type quotaObject struct {
	what  string
	usage corev1.ResourceList
	pod   *corev1.Pod
	claim *corev1.PersistentVolumeClaim
}

// chargedBy says whether quota admission charges the object to q.
func (o quotaObject) chargedBy(q *corev1.ResourceQuota) bool {
	switch {
	case o.pod != nil:
		return harvester.QuotaMatchesPod(q, o.pod)
	case o.claim != nil:
		return harvester.QuotaMatchesClaim(q, o.claim)
	}
	return !harvester.QuotaScoped(q)
}

// quotaEnv is what the quota rules read from Harvester besides the plan.
type quotaEnv struct {
	ratio      string               // additional-guest-memory-overhead-ratio ("": the default)
	overcommit harvester.Overcommit // overcommit-config
	arch       string               // the hosts' architecture
	// staticClaim: the machine claims a static address (one ConfigMap);
	// managedDHCP: a NIC is on a network Harvester's managed DHCP serves
	// (its controller makes the VM's VirtualMachineNetworkConfig).
	staticClaim, managedDHCP bool
	credential               credentialObjects
}

// credentialObjects are the objects of the guest cluster's cloud-provider
// credential in the VM namespace that Create would make.
type credentialObjects struct {
	serviceAccount, secret bool
	roleBindings           []string // names of the RoleBindings to make
}

// Object-count quota names (count/<resource>[.<group>]) of what a create
// makes (count/pods: harvester.PodQuotaUsage).
const (
	countPVCs       corev1.ResourceName = "count/persistentvolumeclaims"
	countSecrets    corev1.ResourceName = "count/secrets"
	countConfigMaps corev1.ResourceName = "count/configmaps"
	countVMs        corev1.ResourceName = "count/virtualmachines.kubevirt.io"
	countVMIs       corev1.ResourceName = "count/virtualmachineinstances.kubevirt.io"
	countNetConfigs corev1.ResourceName = "count/virtualmachinenetworkconfigs.network.harvesterhci.io"
	// the cloud-provider credential's
	countServiceAccounts corev1.ResourceName = "count/serviceaccounts"
	countRoleBindings    corev1.ResourceName = "count/rolebindings.rbac.authorization.k8s.io"
)

// askOf is a plan's ask: its VM is built, mutated as Harvester v1.8's
// webhook will, and rendered as KubeVirt renders the launcher pod.
func askOf(p vmspec.VMPlan, env quotaEnv) (vmAsk, error) {
	vm, err := vmspec.BuildVM(p)
	if err != nil {
		return vmAsk{}, err
	}
	limits := vm.Spec.Template.Spec.Domain.Resources.Limits
	a := vmAsk{
		ruleCPU:      limits.Cpu().DeepCopy(),
		ruleMemory:   limits.Memory().DeepCopy(),
		ruleOverhead: harvester.VMMemoryOverhead(limits, env.arch, env.ratio),
	}
	a.ruleMemory.Add(a.ruleOverhead)
	oc := env.overcommit
	settings := harvester.MutatorSettings{Overcommit: &oc, OverheadRatio: env.ratio, ARM: env.arch == harvester.ArchARM64}
	if err := harvester.MutateVMResources(vm, settings); err != nil {
		return vmAsk{}, fmt.Errorf("the VM mutator of Harvester would refuse the machine: %w", err)
	}
	spec := &vm.Spec.Template.Spec
	pod := harvester.LauncherPod(spec, env.arch, env.ratio)
	a.requests, a.limits = harvester.PodTotals(pod)
	a.launcherOverhead = harvester.LauncherMemoryOverhead(spec, env.arch, env.ratio)
	for _, c := range pod.Spec.InitContainers {
		a.sidecars = append(a.sidecars, sidecar{name: c.Name, usage: harvester.PodQuotaUsage(c.Resources.Requests, c.Resources.Limits)})
	}
	a.objects = append(a.objects, launcherObject(pod, a.requests, a.limits))
	a.storage = *resource.NewQuantity(0, resource.BinarySI)
	for _, d := range p.Disks {
		o := claimObject(d)
		a.storage.Add(o.usage[corev1.ResourceRequestsStorage])
		a.objects = append(a.objects, o)
	}
	a.objects = append(a.objects, counted("its cloud-init Secret", corev1.ResourceSecrets, countSecrets),
		counted("its VM", countVMs), counted("its VM instance", countVMIs))
	if env.staticClaim {
		a.objects = append(a.objects, counted("its static-address claim ConfigMap", corev1.ResourceConfigMaps, countConfigMaps))
	}
	if env.managedDHCP {
		a.objects = append(a.objects, counted("its managed-DHCP VirtualMachineNetworkConfig", countNetConfigs))
	}
	a.objects = append(a.objects, env.credential.objects()...)
	return a, nil
}

// objects are the credential's objects to make.
func (c credentialObjects) objects() []quotaObject {
	var out []quotaObject
	if c.serviceAccount {
		out = append(out, counted("its cluster's cloud-provider ServiceAccount", countServiceAccounts))
	}
	if c.secret {
		out = append(out, counted("its cluster's cloud-provider token Secret", corev1.ResourceSecrets, countSecrets))
	}
	for _, name := range c.roleBindings {
		out = append(out, counted("its cluster's cloud-provider RoleBinding "+name, countRoleBindings))
	}
	return out
}

// one is a quantity of 1 for object counts.
func one() resource.Quantity { return *resource.NewQuantity(1, resource.DecimalSI) }

// counted is an object that counts one under each name.
func counted(what string, names ...corev1.ResourceName) quotaObject {
	usage := corev1.ResourceList{}
	for _, n := range names {
		usage[n] = one()
	}
	return quotaObject{what: what, usage: usage}
}

// launcherObject is the virt-launcher pod and what admission charges it.
func launcherObject(pod *corev1.Pod, requests, limits corev1.ResourceList) quotaObject {
	return quotaObject{what: "its virt-launcher pod", usage: harvester.PodQuotaUsage(requests, limits), pod: pod}
}

// classQuotaInfix joins a storage class and a resource in a quota name.
const classQuotaInfix = ".storageclass.storage.k8s.io/"

// claimObject is a disk's PVC: its size, and one claim, also under its
// storage class.
func claimObject(d vmspec.DiskPlan) quotaObject {
	size := *resource.NewQuantity(int64(d.SizeGiB)<<30, resource.BinarySI)
	class := d.StorageClassName + classQuotaInfix
	usage := corev1.ResourceList{
		corev1.ResourceRequestsStorage: size, corev1.ResourcePersistentVolumeClaims: one(), countPVCs: one(),
		corev1.ResourceName(class + string(corev1.ResourceRequestsStorage)):        size,
		corev1.ResourceName(class + string(corev1.ResourcePersistentVolumeClaims)): one(),
	}
	pvc := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &d.StorageClassName}}
	return quotaObject{what: "its volumes' claims", usage: usage, claim: pvc}
}

// needs is the amount of a quota resource the machine's objects that q
// charges consume, and which of them ("" when none does).
func (a vmAsk) needs(q *corev1.ResourceQuota, name corev1.ResourceName) (resource.Quantity, []string) {
	var sum resource.Quantity
	var whats []string
	for _, o := range a.objects {
		u, ok := o.usage[name]
		if !ok || !o.chargedBy(q) {
			continue
		}
		if len(whats) == 0 {
			sum = u.DeepCopy()
		} else {
			sum.Add(u)
		}
		if !slices.Contains(whats, o.what) {
			whats = append(whats, o.what)
		}
	}
	return sum, whats
}

// quotaShortfalls lists, for every ResourceQuota of the namespace, each
// resource the machine would take beyond what is free (hard - used), as
// the API server's quota admission would refuse it (counting each object
// only against the quotas whose scopes select it); and Harvester's own
// rule (a Rancher project's limits on the namespace against its default
// quota's usage, pkg/util/resourcequota). Empty: it fits.
func quotaShortfalls(ask vmAsk, ns *corev1.Namespace, quotas []corev1.ResourceQuota) []string {
	var out []string
	for i := range quotas {
		q := &quotas[i]
		names := make([]string, 0, len(q.Spec.Hard))
		for n := range q.Spec.Hard {
			names = append(names, string(n))
		}
		sort.Strings(names)
		for _, n := range names {
			name := corev1.ResourceName(n)
			need, whats := ask.needs(q, name)
			if len(whats) == 0 {
				continue
			}
			hard, used := q.Spec.Hard[name], q.Status.Used[name]
			if msg := shortfall(name, need, hard, used, whats); msg != "" {
				out = append(out, fmt.Sprintf("ResourceQuota %s/%s: %s: %s%s", q.Namespace, q.Name, name, msg, launcherNote(name, ask)))
			}
		}
	}
	return append(out, harvesterRuleShortfalls(ask, ns, quotas)...)
}

// shortfall says why need of the resource name does not fit into hard -
// used ("" when it does); an object count names the objects (whats).
func shortfall(name corev1.ResourceName, need, hard, used resource.Quantity, whats []string) string {
	free := hard.DeepCopy()
	free.Sub(used)
	if need.Cmp(free) <= 0 {
		return ""
	}
	if free.Sign() < 0 {
		free = resource.Quantity{}
	}
	f := figuresOf(name, hard)
	needText, freeText := f.text(need), f.text(free)
	if needText == freeText {
		needText, freeText = need.String(), free.String()
	}
	if countResource(name) {
		needText += " for " + strings.Join(whats, " and ")
	}
	return fmt.Sprintf("the machine needs %s, %s of %s is free (%s used)", needText, freeText, f.text(hard), f.text(used))
}

// overheadNote explains a memory figure: the VM's memory and whose
// overhead.
func overheadNote(name corev1.ResourceName, overhead resource.Quantity, whose string) string {
	if !memoryQuota[name] {
		return ""
	}
	return fmt.Sprintf(" (the VM's memory and %s VM overhead %s)", whose, figures{name: name, unit: len(binaryUnits) - 1}.text(overhead))
}

// launcherNote explains a figure of the launcher pod: a memory figure is
// the VM's memory, KubeVirt's overhead and the sidecars', a CPU figure the
// VM's CPU and the sidecars'.
func launcherNote(name corev1.ResourceName, ask vmAsk) string {
	f := figures{name: name, unit: len(binaryUnits) - 1}
	var parts []string
	switch {
	case memoryQuota[name]:
		parts = []string{"the VM's memory", "KubeVirt's VM overhead " + f.text(ask.launcherOverhead)}
	case cpuResource(name):
		parts = []string{"the VM's CPU"}
	default:
		return ""
	}
	for _, c := range ask.sidecars {
		if q, ok := c.usage[name]; ok {
			parts = append(parts, fmt.Sprintf("its %s sidecar's %s", c.name, f.text(q)))
		}
	}
	if len(parts) == 1 {
		return ""
	}
	last := len(parts) - 1
	return " (" + strings.Join(parts[:last], ", ") + " and " + parts[last] + ")"
}

// harvesterRuleShortfalls is Harvester v1.8's check of a VM against a
// Rancher project's namespace limits: the namespace annotation's limits
// minus the usage of Rancher's default ResourceQuota (less what migrating
// VMs hold twice) must cover the VM's CPU, memory with overhead and
// volumes.
func harvesterRuleShortfalls(ask vmAsk, ns *corev1.Namespace, quotas []corev1.ResourceQuota) []string {
	if ns == nil || ns.Annotations[harvester.AnnotationRancherResourceQuota] == "" {
		return nil
	}
	rq := harvester.DefaultQuota(quotas)
	limits, ok := harvester.ParseRancherQuota(ns.Annotations[harvester.AnnotationRancherResourceQuota])
	if rq == nil || !ok {
		return nil
	}
	// A recorded migration that does not parse fails Harvester's check;
	// the others are still subtracted here.
	migrating, _ := harvester.MigratingUsage(rq)
	var out []string
	for _, c := range []struct {
		field string
		limit string
		used  corev1.ResourceName
		need  resource.Quantity
	}{
		{"limitsCpu", limits.Limit.LimitsCPU, corev1.ResourceLimitsCPU, ask.ruleCPU},
		{"limitsMemory", limits.Limit.LimitsMemory, corev1.ResourceLimitsMemory, ask.ruleMemory},
		{"requestsStorage", limits.Limit.RequestsStorage, corev1.ResourceRequestsStorage, ask.storage},
	} {
		hard, err := resource.ParseQuantity(c.limit)
		if c.limit == "" || err != nil || hard.IsZero() {
			continue
		}
		used := rq.Status.Used[c.used].DeepCopy()
		used.Sub(migrating[c.used])
		if msg := shortfall(c.used, c.need, hard, used, nil); msg != "" {
			out = append(out, fmt.Sprintf("namespace %s's project quota (%s %s): %s: %s%s", ns.Name, harvester.AnnotationRancherResourceQuota, c.field, c.used, msg, overheadNote(c.used, ask.ruleOverhead, "Harvester's")))
		}
	}
	return out
}
