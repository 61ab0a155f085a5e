package fault

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// The stuck-scheduling fault holds the VMIs of matching VMs in Scheduling
// the way a real cluster can: kube-apiserver refuses to bind their
// virt-launcher Pods (a ValidatingAdmissionPolicy on pods/binding), so the
// real kube-scheduler reports the Pod unschedulable (condition PodScheduled
// False with the refusal, event FailedScheduling, retried with its backoff)
// and KubeVirt's virt-controller copies that condition to the VMI. The
// policy names each pattern, plus a probe pattern: a dry-run binding of
// the probe's launcher Pod is refused once the policy is in effect.
const (
	StuckSchedulingPolicy = "harvester-sim-stuck-scheduling"
	stuckProbeVM          = "harvester-sim-stuck-probe"
)

// StuckSchedulingMessage is the refusal (and so the scheduler's message)
// for a VM of pattern.
func StuckSchedulingMessage(pattern string) string {
	return fmt.Sprintf("held in Scheduling by the simulator fault %s (pattern %q in ConfigMap %s)", StuckScheduling, pattern, ConfigMapKey)
}

// StuckPatterns are the stuck-scheduling patterns.
func (f Patterns) StuckPatterns() []string { return slices.Clone(f.patterns[StuckScheduling]) }

// BuildStuckSchedulingPolicy is the policy (and its binding) refusing the
// binding of the launcher Pods (virt-launcher-<VM name>-xxxxx) of the VMs
// matching patterns ("namespace/name" globs), or nil when there are none.
func BuildStuckSchedulingPolicy(patterns []string) (*admissionv1.ValidatingAdmissionPolicy, *admissionv1.ValidatingAdmissionPolicyBinding) {
	if len(patterns) == 0 {
		return nil, nil
	}
	var validations []admissionv1.Validation
	for _, p := range append([]string{Namespace + "/" + stuckProbeVM}, patterns...) {
		ns, name, _ := strings.Cut(p, "/")
		validations = append(validations, admissionv1.Validation{
			Expression: fmt.Sprintf("!(request.namespace.matches(%s) && object.metadata.name.matches(%s))",
				celString("^"+globRegex(ns)+"$"), celString("^virt-launcher-"+globRegex(name)+"-[a-z0-9]{5}$")),
			Message: StuckSchedulingMessage(p),
		})
	}
	return denyPolicy(StuckSchedulingPolicy, StuckScheduling,
		admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding"}}, validations)
}

// globRegex is a path.Match glob as a regular expression (no anchors).
func globRegex(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '*':
			b.WriteString("[^/]*")
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(glob[i:], ']')
			if j < 0 {
				b.WriteString(regexp.QuoteMeta(glob[i:]))
				return b.String()
			}
			b.WriteString(glob[i : i+j+1]) // path.Match's classes are RE2's ([^...] negates)
			i += j
		case '\\':
			if i+1 < len(glob) {
				i++
				b.WriteString(regexp.QuoteMeta(glob[i : i+1]))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// celString quotes s as a CEL string literal.
func celString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// SyncStuckScheduling makes the policy say patterns (none: no policy) and
// returns once kube-apiserver enforces it.
func SyncStuckScheduling(ctx context.Context, kube kubernetes.Interface, patterns []string) error {
	api := kube.AdmissionregistrationV1()
	policy, binding := BuildStuckSchedulingPolicy(patterns)
	if policy == nil {
		err := api.ValidatingAdmissionPolicyBindings().Delete(ctx, StuckSchedulingPolicy, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("stuck-scheduling: delete binding: %w", err)
		}
		err = api.ValidatingAdmissionPolicies().Delete(ctx, StuckSchedulingPolicy, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("stuck-scheduling: delete policy: %w", err)
		}
		return waitStuckProbe(ctx, kube, false)
	}
	cur, err := api.ValidatingAdmissionPolicies().Get(ctx, StuckSchedulingPolicy, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{})
	case err == nil && !equality.Semantic.DeepEqual(cur.Spec.Validations, policy.Spec.Validations):
		policy.ResourceVersion = cur.ResourceVersion
		_, err = api.ValidatingAdmissionPolicies().Update(ctx, policy, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("stuck-scheduling: write policy: %w", err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("stuck-scheduling: create binding: %w", err)
	}
	return waitStuckProbe(ctx, kube, true)
}

// waitStuckProbe waits until a dry-run binding of the probe's launcher Pod
// is refused (held) or not (the Pod does not exist: NotFound).
func waitStuckProbe(ctx context.Context, kube kubernetes.Interface, held bool) error {
	name := "virt-launcher-" + stuckProbeVM + "-probe"
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Target: corev1.ObjectReference{Kind: "Node", Name: "harvester-sim-probe"}}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		err := kube.CoreV1().Pods(Namespace).Bind(ctx, binding, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		refused := err != nil && strings.Contains(err.Error(), string(StuckScheduling))
		return refused == held, nil
	})
	if err != nil {
		return fmt.Errorf("stuck-scheduling: policy not in effect after 30s: %w", err)
	}
	return nil
}
