// Package capacity checks, before a machine is created, that it fits its
// namespace's quotas (Kubernetes' and Harvester's rules, with the memory
// overhead and the launcher pod's requests) and that its vGPUs have room.
// The flags' bounds and the Secret's size limit are config's.
package capacity

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/harvester-kit/harvester-machine/driver/config"
	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/driver/machine"
	"github.com/harvester-kit/harvester-machine/driver/vmspec"
	"github.com/harvester-kit/harvester-machine/guest/credentials"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// Demand is what the capacity check counts of a machine: its plan (nil
// for a machine that could not be planned: its images failed, which is
// reported), its vGPUs, whether it claims a static address, and whether
// managed DHCP serves one of its networks (the network check found it).
type Demand struct {
	Plan        *vmspec.VMPlan
	VGPUs       []config.VGPURequest
	StaticClaim bool
	ManagedDHCP bool
}

// Check checks, before anything exists, that the machine fits the
// namespace's ResourceQuotas (the API server's rule and Harvester's) and
// that its vGPU profiles have room on some host. One list of the quotas;
// the overhead setting only when a quota limits memory, the namespace only
// when Rancher's default quota is there; the hosts only with vGPUs. Reads
// that are forbidden are skipped with a warning.
func Check(ctx context.Context, api *harvesterapi.API, m *machine.Machine, c Demand) []error {
	var problems []error
	if c.Plan != nil {
		env := quotaEnv{staticClaim: c.StaticClaim, managedDHCP: c.ManagedDHCP}
		problems = append(problems, checkQuotas(ctx, api, m, *c.Plan, env)...)
	}
	if len(c.VGPUs) > 0 {
		problems = append(problems, checkVGPUs(ctx, api, m, c.VGPUs)...)
	}
	return problems
}

func checkQuotas(ctx context.Context, api *harvesterapi.API, m *machine.Machine, plan vmspec.VMPlan, env quotaEnv) []error {
	quotas, err := api.ListResourceQuotas(ctx, m.Config.VMNamespace)
	switch {
	case apierrors.IsForbidden(err):
		log.Warnf("cannot list the resource quotas of namespace %s (forbidden); skipping the quota check", m.Config.VMNamespace)
		return nil
	case err != nil:
		return []error{err}
	case len(quotas.Items) == 0:
		return nil
	}
	var ns *corev1.Namespace
	memory, requests := false, false
	for _, q := range quotas.Items {
		for name := range q.Spec.Hard {
			memory = memory || memoryQuota[name]
			requests = requests || requestsQuota[name]
		}
		if q.Labels[harvester.LabelDefaultResourceQuota] == "true" && ns == nil {
			memory = true
			if ns, err = api.GetNamespace(ctx, m.Config.VMNamespace); err != nil {
				log.Warnf("cannot read namespace %s for its project quota (%v); checking its ResourceQuotas only", m.Config.VMNamespace, err)
				ns = nil
			}
		}
	}
	env.overcommit = overcommitSetting(ctx, api, requests)
	if m.Config.CloudProvider != "" {
		env.credential = credentialToMake(ctx, api, m, quotas.Items)
	}
	if memory {
		env.ratio = setting(ctx, api, harvester.SettingMemoryOverheadRatio, harvester.DefaultMemoryOverheadRatio)
		env.arch = hostArch(ctx, api)
	}
	ask, err := askOf(plan, env)
	if err != nil {
		return []error{err}
	}
	var problems []error
	for _, s := range quotaShortfalls(ask, ns, quotas.Items) {
		problems = append(problems, fmt.Errorf("the machine does not fit its namespace's quota, so nothing was created: %s", s))
	}
	return problems
}

// The quota resources whose amount depends on the memory overhead, and
// those that count the launcher pod's requests (which Harvester derives
// from the overcommit setting).
var (
	memoryQuota = map[corev1.ResourceName]bool{
		corev1.ResourceLimitsMemory: true, corev1.ResourceRequestsMemory: true, corev1.ResourceMemory: true,
	}
	requestsQuota = map[corev1.ResourceName]bool{
		corev1.ResourceRequestsCPU: true, corev1.ResourceCPU: true, corev1.ResourceRequestsMemory: true, corev1.ResourceMemory: true,
	}
)

// overcommitSetting is Harvester's overcommit-config, read only when a quota
// counts requests (its default otherwise, or when it cannot be read).
func overcommitSetting(ctx context.Context, api *harvesterapi.API, read bool) harvester.Overcommit {
	def, _ := harvester.ParseOvercommit("")
	if !read {
		return def
	}
	o, err := harvester.ParseOvercommit(setting(ctx, api, harvester.SettingOvercommit, harvester.DefaultOvercommit))
	if err != nil {
		log.Warnf("%v; using its default %s", err, harvester.DefaultOvercommit)
		return def
	}
	return o
}

// setting is a Harvester setting's current value ("" when it cannot be
// read: the caller's default applies).
func setting(ctx context.Context, api *harvesterapi.API, name, def string) string {
	s, err := api.GetSetting(ctx, name)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			log.Warnf("cannot read Harvester setting %s (%v); using its default %s", name, err, def)
		}
		return ""
	}
	return s.Current()
}

// hostArch is the hosts' architecture (amd64 when it cannot be read).
func hostArch(ctx context.Context, api *harvesterapi.API) string {
	arch, err := api.HostArch(ctx)
	switch {
	case err != nil:
		log.Warnf("cannot read the hosts' architecture (%v); assuming amd64 for KubeVirt's memory overhead", err)
	case arch == "":
		log.Warnf("no host carries the label %s; assuming amd64 for KubeVirt's memory overhead", corev1.LabelArchStable)
	default:
		return arch
	}
	return "amd64"
}

// credentialToMake is which objects of the guest cluster's cloud-provider
// credential in the VM namespace Create would make (the cluster's first
// machine makes them, later ones reuse them). Each is read only when an
// unscoped quota counts its kind; one that cannot be read is not counted.
func credentialToMake(ctx context.Context, api *harvesterapi.API, m *machine.Machine, quotas []corev1.ResourceQuota) credentialObjects {
	counts := map[corev1.ResourceName]bool{}
	for i := range quotas {
		if !harvester.QuotaScoped(&quotas[i]) {
			for n := range quotas[i].Spec.Hard {
				counts[n] = true
			}
		}
	}
	a := credentials.Access{ClusterName: m.Config.ClusterName, Namespace: m.Config.VMNamespace}.WithDefaults()
	missing := func(err error) bool {
		if err != nil && !apierrors.IsNotFound(err) {
			log.Warnf("%v; not counting it against the namespace's quotas", err)
		}
		return apierrors.IsNotFound(err)
	}
	var c credentialObjects
	if counts[corev1.ResourceSecrets] || counts[countSecrets] {
		_, err := api.GetSecret(ctx, a.Namespace, a.TokenSecretName())
		c.secret = missing(err)
	}
	if counts[countServiceAccounts] {
		_, err := api.GetServiceAccount(ctx, a.Namespace, a.ServiceAccount)
		c.serviceAccount = missing(err)
	}
	if counts[countRoleBindings] {
		for _, name := range []string{a.RoleBindingName(), a.CSIRoleBindingName()} {
			if _, err := api.GetRoleBinding(ctx, a.Namespace, name); missing(err) {
				c.roleBindings = append(c.roleBindings, name)
			}
		}
	}
	return c
}
