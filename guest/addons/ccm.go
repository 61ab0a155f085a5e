package addons

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/harvester-kit/harvester-machine/internal/harvester"
)

const ccmServiceAccount = "harvester-cloud-controller-manager"

// CloudProviderObjects builds the CCM's RBAC and Deployment.
func CloudProviderObjects(o Options) []runtime.Object {
	img := o.Versions.CloudProvider
	labels := o.labels(CCMName, img.Tag)
	selector := map[string]string{LabelName: CCMName}
	rules := ccmRules(img)
	dep := &appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: CCMName, Namespace: o.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(o.CCMReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: ccmServiceAccount,
					HostNetwork:        true,
					PriorityClassName:  "system-cluster-critical",
					Containers: []corev1.Container{{
						Name:            CCMName,
						Image:           img.Ref(o.ImageRegistry),
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         []string{"harvester-cloud-provider"},
						Args:            append([]string{defaultCCMArgs, harvester.CCMClusterNameFlag + "=" + o.ClusterName}, o.LB.CCMArgs()...),
						VolumeMounts: []corev1.VolumeMount{{
							Name: "cloud-config", MountPath: "/etc/kubernetes/cloud-config", SubPath: CloudConfigKey, ReadOnly: true,
						}},
					}},
					Volumes: []corev1.Volume{{
						Name: "cloud-config",
						VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: o.CloudConfigSecret, DefaultMode: ptr(int32(0o400)),
						}},
					}},
					Tolerations: tolerations(),
					Affinity:    controlPlaneAffinity(),
				},
			},
		},
	}
	return []runtime.Object{
		serviceAccount(ccmServiceAccount, o.Namespace, labels),
		clusterRole(ccmServiceAccount, labels, rules...),
		clusterRoleBinding(ccmServiceAccount, ccmServiceAccount, ccmServiceAccount, o.Namespace, labels),
		&rbacv1.RoleBinding{
			TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: ccmServiceAccount + ":auth-reader", Namespace: "kube-system", Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "extension-apiserver-authentication-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: ccmServiceAccount, Namespace: o.Namespace}},
		},
		dep,
	}
}

// ccmRules are the guest-side rules the selected cloud-provider release needs.
func ccmRules(img Image) []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{
		rule(core, []string{"services", "nodes", "events"}, readEdit),
		rule(core, []string{"services/status", "nodes/status"}, []string{"update", "patch"}),
		rule(core, []string{"serviceaccounts"}, []string{"create", "get"}),
		rule(core, []string{"serviceaccounts/token"}, []string{"create"}),
		rule(core, []string{"endpoints"}, readEdit),
		rule([]string{"coordination.k8s.io"}, []string{"leases"}, readEdit),
	}
	if img.AtLeast(ccmNADMappingSince) {
		// ConfigMap kube-system/harvester-nad-mapping.
		rules = append(rules, rule(core, []string{"configmaps"}, []string{"get", "list", "watch", "create", "update"}))
	}
	return rules
}
