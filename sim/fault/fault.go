// Package fault is the simulator's fault interface, used by its command
// line, its controllers and end-to-end tests: the fault names, the ConfigMap
// of VM patterns, and injecting and clearing faults, each returning only
// once the fault is in effect.
package fault

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// Fault names (the `harvester-sim fault` subcommands); see docs/sim.md's
// "Faults" section.
const (
	RejectCreate     = "reject-create"
	StuckScheduling  = "stuck-scheduling"
	NoIP             = "no-ip"
	IPv6Only         = "ipv6-only"
	DockerEngine     = "docker-engine"
	GuestBridges     = "guest-bridges"
	ExhaustPool      = "exhaust-pool"
	DelayAllocation  = "delay-allocation"
	DHCPAgentDown    = "dhcp-agent-down"
	RestartAPIServer = "restart-apiserver"
	FreezeAPIServer  = "freeze-apiserver"
	HostDown         = "host-down"
	ClearAll         = "clear"
)

// VMFaults are the faults given by NAMESPACE/NAME patterns of VMs.
var VMFaults = []string{StuckScheduling, NoIP, IPv6Only, DockerEngine, GuestBridges}

// The ConfigMap of VM fault patterns: one key per VM fault, one
// NAMESPACE/NAME glob a line. The controllers acknowledge what they have
// read with AnnotationObserved (the Digest of the data).
const (
	Namespace          = "harvester-system"
	ConfigMap          = "harvester-sim-faults"
	AnnotationObserved = "sim.harvesterhci.io/observed"
	faultLabel         = "sim.harvesterhci.io/fault"
	rejectPolicyPrefix = "harvester-sim-reject-"
	// probeNamespace holds the dry-run objects that probe reject-create.
	probeNamespace = metav1.NamespaceDefault
)

// buildRejectCreatePolicy is a ValidatingAdmissionPolicy (and its binding)
// that makes the real kube-apiserver refuse creates of resource in group.
func buildRejectCreatePolicy(group, resource string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	name := rejectPolicyPrefix + strings.Trim(strings.ReplaceAll(resource+"."+group, "/", "-"), ".")
	return denyPolicy(name, RejectCreate, admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
		[]admissionv1.Validation{{
			Expression: "false",
			Message:    fmt.Sprintf("harvester-sim fault: creates of %s are rejected", strings.Trim(resource+"."+group, ".")),
		}})
}

// denyPolicy is a policy named name of fault (label) that refuses the
// creates rule matches which fail one of validations, and its binding.
func denyPolicy(name, fault string, rule admissionv1.Rule, validations []admissionv1.Validation) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	labels := map[string]string{faultLabel: fault}
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: rule},
			}}},
			Validations: validations,
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
		},
	}
	return policy, binding
}

// parseResource splits "virtualmachines.kubevirt.io" into resource and group
// ("secrets" is the core group).
func parseResource(s string) (group, resource string, err error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "" || strings.ContainsAny(s, " /*") {
		return "", "", fmt.Errorf("reject-create: %q is not a resource: use RESOURCE[.GROUP], e.g. virtualmachines.kubevirt.io or secrets", s)
	}
	resource, group, _ = strings.Cut(s, ".")
	return group, resource, nil
}

// RejectCreates makes the apiserver refuse creates of resource
// ("RESOURCE[.GROUP]") and returns once it does.
func RejectCreates(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface, resourceGroup string) error {
	group, resource, err := parseResource(resourceGroup)
	if err != nil {
		return err
	}
	policy, binding := buildRejectCreatePolicy(group, resource)
	api := kube.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("reject-create: create policy: %w", err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("reject-create: create binding: %w", err)
	}
	return waitProbe(ctx, kube, dyn, group, resource, probeRejected)
}

// SetVM adds (or with remove, removes) a namespace/name glob pattern to a
// VM fault list (VMFaults) and returns once the controllers act on the new
// list.
func SetVM(ctx context.Context, kube kubernetes.Interface, fault, pattern string, remove bool) error {
	if !slices.Contains(VMFaults, fault) {
		return fmt.Errorf("fault %q: use one of %s", fault, strings.Join(VMFaults, ", "))
	}
	if _, err := path.Match(pattern, ""); err != nil || !strings.Contains(pattern, "/") {
		return fmt.Errorf("fault %s: pattern %q must be NAMESPACE/NAME with optional * ? [] globs", fault, pattern)
	}
	return SetLine(ctx, kube, fault, pattern, remove)
}

// editBackoff paces EditConfigMap's conflict retries. Every write of the
// ConfigMap, the controllers' acknowledgements included, conflicts with a
// concurrent writer's read: with tests run in parallel each setting a
// pattern of its own VMs at the same moment, client-go's DefaultRetry (5
// tries about 10 ms apart) can run out. This one keeps trying for about
// 10 s.
var editBackoff = wait.Backoff{Steps: 15, Duration: 20 * time.Millisecond, Factor: 1.5, Jitter: 0.5, Cap: 2 * time.Second}

// SetLine adds (or with remove, removes) one line of a key of the fault
// ConfigMap, lines identified by their first field (the pattern), and
// returns once the controllers have read the new content.
func SetLine(ctx context.Context, kube kubernetes.Interface, fault, line string, remove bool) error {
	want, err := EditConfigMap(ctx, kube, ConfigMap, map[string]string{faultLabel: "vm"}, func(data map[string]string) {
		data[fault] = editPatterns(data[fault], line, remove)
	})
	if err != nil {
		return fmt.Errorf("fault %s: %w", fault, err)
	}
	return waitObserved(ctx, kube, want)
}

// EditConfigMap applies edit to the data of ConfigMap Namespace/name,
// creating it (with labels) when missing, retrying conflicts, and returns
// the Digest of the data written.
func EditConfigMap(ctx context.Context, kube kubernetes.Interface, name string, labels map[string]string, edit func(data map[string]string)) (string, error) {
	cms := kube.CoreV1().ConfigMaps(Namespace)
	var digest string
	err := retry.RetryOnConflict(editBackoff, func() error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: labels}, Data: map[string]string{}}
			edit(cm.Data)
			digest = Digest(cm.Data)
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) { // a concurrent first writer
				return apierrors.NewConflict(corev1.Resource("configmaps"), name, err)
			}
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		edit(cm.Data)
		digest = Digest(cm.Data)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
	return digest, err
}

// waitObserved waits until the controllers have acknowledged fault data
// with digest want, or anything newer.
func waitObserved(ctx context.Context, kube kubernetes.Interface, want string) error {
	cms := kubeapi.KindOf[*corev1.ConfigMapList]("ConfigMap", &corev1.ConfigMap{}, kube.CoreV1().ConfigMaps(Namespace))
	_, err := kubeapi.Wait(ctx, cms, Namespace, ConfigMap, 0, func(cm *corev1.ConfigMap) (bool, error) {
		if cm == nil {
			return true, nil // cleared meanwhile: no pattern left to act on
		}
		seen := cm.Annotations[AnnotationObserved]
		// A later writer's data, once acknowledged, includes or replaces ours.
		return seen == want || seen == Digest(cm.Data), nil
	})
	if err != nil {
		return fmt.Errorf("fault patterns not acknowledged by the simulator's controllers: %w", err)
	}
	return nil
}

// editPatterns adds or removes a line in a newline-separated list; a line
// replaces those with the same first field (the pattern).
func editPatterns(list, line string, remove bool) string {
	var out []string
	pattern := firstField(line)
	for _, p := range strings.Split(list, "\n") {
		if p = strings.TrimSpace(p); p != "" && firstField(p) != pattern {
			out = append(out, p)
		}
	}
	if !remove {
		out = append(out, line)
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// Clear removes every fault, reject-create policies and VM patterns,
// and returns once creates are accepted again.
func Clear(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface) error {
	api := kube.AdmissionregistrationV1()
	sel := metav1.ListOptions{LabelSelector: faultLabel}
	policies, err := api.ValidatingAdmissionPolicies().List(ctx, sel)
	if err != nil {
		return fmt.Errorf("clear faults: %w", err)
	}
	if err := api.ValidatingAdmissionPolicyBindings().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		return fmt.Errorf("clear faults: %w", err)
	}
	if err := api.ValidatingAdmissionPolicies().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		return fmt.Errorf("clear faults: %w", err)
	}
	err = kube.CoreV1().ConfigMaps(Namespace).Delete(ctx, ConfigMap, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clear faults: %w", err)
	}
	for _, p := range policies.Items {
		for _, rule := range p.Spec.MatchConstraints.ResourceRules {
			for _, g := range rule.APIGroups {
				for _, r := range rule.Resources {
					if err := waitProbe(ctx, kube, dyn, g, r, probeAccepted); err != nil {
						return fmt.Errorf("clear faults: %w", err)
					}
				}
			}
		}
	}
	return nil
}

func firstField(line string) string {
	if f := strings.Fields(line); len(f) > 0 {
		return f[0]
	}
	return ""
}
