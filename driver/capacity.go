package driver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/harvester-kit/harvester-machine/driver/harvesterapi"
	"github.com/harvester-kit/harvester-machine/internal/harvester"
	log "github.com/harvester-kit/harvester-machine/internal/pluginlog"
)

// checkCapacity checks, before anything exists, that the machine fits the
// namespace's ResourceQuotas (the API server's rule and Harvester's) and
// that its vGPU profiles have room on some host. One list of the quotas;
// the overhead setting only when a quota limits memory, the namespace only
// when Rancher's default quota is there; the hosts only with vGPUs. Reads
// that are forbidden are skipped with a warning. images: what checkImages
// read (a machine whose images failed is not planned: that is reported).
func (d *Driver) checkCapacity(ctx context.Context, api *harvesterapi.API, in Inputs, images map[string]ImageFacts) []error {
	var problems []error
	plan, err := PlanFromConfig(d.Config, in, d.MachineName, images)
	if err == nil {
		problems = append(problems, d.checkQuotas(ctx, api, plan)...)
	}
	if len(in.VGPUs) > 0 {
		problems = append(problems, d.checkVGPUs(ctx, api, in.VGPUs)...)
	}
	return problems
}

func (d *Driver) checkQuotas(ctx context.Context, api *harvesterapi.API, plan VMPlan) []error {
	quotas, err := api.ListResourceQuotas(ctx, d.VMNamespace)
	switch {
	case apierrors.IsForbidden(err):
		log.Warnf("cannot list the resource quotas of namespace %s (forbidden); skipping the quota check", d.VMNamespace)
		return nil
	case err != nil:
		return []error{err}
	case len(quotas.Items) == 0:
		return nil
	}
	var ns *corev1.Namespace
	memoryLimited := false
	for _, q := range quotas.Items {
		_, limited := q.Spec.Hard[corev1.ResourceLimitsMemory]
		memoryLimited = memoryLimited || limited
		if q.Labels[harvester.LabelDefaultResourceQuota] == "true" && ns == nil {
			memoryLimited = true
			if ns, err = api.GetNamespace(ctx, d.VMNamespace); err != nil {
				log.Warnf("cannot read namespace %s for its project quota (%v); checking its ResourceQuotas only", d.VMNamespace, err)
				ns = nil
			}
		}
	}
	ratio := ""
	if memoryLimited {
		ratio = d.memoryOverheadRatio(ctx, api)
	}
	var problems []error
	for _, s := range quotaShortfalls(askOf(plan, ratio), ns, quotas.Items) {
		problems = append(problems, fmt.Errorf("the machine does not fit its namespace's quota, so nothing was created: %s", s))
	}
	return problems
}

// memoryOverheadRatio is Harvester's additional-guest-memory-overhead-ratio
// ("" when it cannot be read: the default applies).
func (d *Driver) memoryOverheadRatio(ctx context.Context, api *harvesterapi.API) string {
	s, err := api.GetSetting(ctx, harvester.SettingMemoryOverheadRatio)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			log.Warnf("cannot read Harvester setting %s (%v); using its default %s", harvester.SettingMemoryOverheadRatio, err, harvester.DefaultMemoryOverheadRatio)
		}
		return ""
	}
	return s.Current()
}
