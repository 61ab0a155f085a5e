package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Fault interface: see the README's "Faults" section.
const (
	FaultsConfigMap      = "harvester-sim-faults"
	FaultStuckScheduling = "stuck-scheduling"
	FaultNoIP            = "no-ip"
	FaultExhaustPool     = "exhaust-pool"
	FaultDelayAllocation = "delay-allocation"
	faultLabel           = "sim.harvesterhci.io/fault"
	rejectPolicyPrefix   = "harvester-sim-reject-"
)

// buildRejectCreatePolicy is a ValidatingAdmissionPolicy (and its binding)
// that makes the real kube-apiserver refuse creates of resource in group.
func buildRejectCreatePolicy(group, resource string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	name := rejectPolicyPrefix + strings.Trim(strings.ReplaceAll(resource+"."+group, "/", "-"), ".")
	labels := map[string]string{faultLabel: "reject-create"}
	fail := admissionv1.Fail
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "false",
				Message:    fmt.Sprintf("harvester-sim fault: creates of %s are rejected", strings.Trim(resource+"."+group, ".")),
			}},
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

// SetVMFault adds (or with remove, removes) a namespace/name glob pattern to a
// VM fault list (FaultStuckScheduling or FaultNoIP).
func SetVMFault(ctx context.Context, kube kubernetes.Interface, fault, pattern string, remove bool) error {
	if fault != FaultStuckScheduling && fault != FaultNoIP {
		return fmt.Errorf("fault %q: use %s or %s", fault, FaultStuckScheduling, FaultNoIP)
	}
	if _, err := filepath.Match(pattern, ""); err != nil || !strings.Contains(pattern, "/") {
		return fmt.Errorf("fault %s: pattern %q must be NAMESPACE/NAME with optional * ? [] globs", fault, pattern)
	}
	return setFaultLine(ctx, kube, fault, pattern, remove)
}

// setFaultLine adds (or removes) one line of a key of the fault ConfigMap;
// lines are identified by their first field.
func setFaultLine(ctx context.Context, kube kubernetes.Interface, fault, line string, remove bool) error {
	cms := kube.CoreV1().ConfigMaps(SystemNamespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, FaultsConfigMap, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: FaultsConfigMap, Namespace: SystemNamespace, Labels: map[string]string{faultLabel: "vm"}}}
			cm.Data = map[string]string{fault: editPatterns("", line, remove)}
			_, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[fault] = editPatterns(cm.Data[fault], line, remove)
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	})
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
		out = append(out, strings.TrimSpace(line))
	}
	slices.Sort(out)
	return strings.Join(out, "\n")
}

// ClearFaults removes every fault, reject-create policies and VM patterns,
// and returns once creates are accepted again.
func ClearFaults(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface) error {
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
	err = kube.CoreV1().ConfigMaps(SystemNamespace).Delete(ctx, FaultsConfigMap, metav1.DeleteOptions{})
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

// RestartAPIServer asks the simulator serving dir to restart kube-apiserver
// and waits until a new one is serving.
func RestartAPIServer(ctx context.Context, dir string) error {
	data, err := os.ReadFile(filepath.Join(dir, PIDFile))
	if err != nil {
		return fmt.Errorf("restart-apiserver: no simulator runs in %s: %w", dir, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("restart-apiserver: bad pid file in %s: %w", dir, err)
	}
	apiPIDPath := filepath.Join(dir, APIServerPIDFile)
	before, _ := os.ReadFile(apiPIDPath)
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("restart-apiserver: signal simulator pid %d: %w", pid, err)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if now, err := os.ReadFile(apiPIDPath); err == nil && len(now) > 0 && string(now) != string(before) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("restart-apiserver: no new kube-apiserver is serving: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

func firstField(line string) string {
	if f := strings.Fields(line); len(f) > 0 {
		return f[0]
	}
	return ""
}
