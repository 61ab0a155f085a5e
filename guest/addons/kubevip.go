package addons

import (
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// KubeVIPName names kube-vip's ServiceAccount, RBAC and DaemonSet, as
// Harvester's harvester-cloud-provider chart (sub-chart kube-vip) does.
const KubeVIPName = "kube-vip"

// kube-vip's environment keys this package sets or reads.
const (
	KubeVIPEnvInterface   = "vip_interface"
	KubeVIPEnvSvcEnable   = "svc_enable"
	KubeVIPEnvSvcElection = "svc_election"
	// KubeVIPEnvNodeName is kube-vip's node name; without it kube-vip
	// takes the hostname, and under svc_election a node whose hostname
	// differs from its node name never announces.
	KubeVIPEnvNodeName = "vip_nodename"
)

// KubeVIPNodeNameField is the downward-API field vip_nodename comes from.
const KubeVIPNodeNameField = "spec.nodeName"

// KubeVIPNodeNameSource is where vip_nodename comes from: the pod's node.
func KubeVIPNodeNameSource() *corev1.EnvVarSource {
	return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: KubeVIPNodeNameField}}
}

// KubeVIPAddressAnnotation is the Service annotation the cloud provider
// writes the LoadBalancer's address into; kube-vip announces it.
const KubeVIPAddressAnnotation = "kube-vip.io/loadbalancerIPs"

// kubeVIPChartEnv is Harvester's values for kube-vip's environment: ARP
// announcements of Service addresses (svc_enable), no control-plane VIP.
func kubeVIPChartEnv() map[string]string {
	return map[string]string{
		KubeVIPEnvInterface:   "",
		"vip_arp":             "true",
		"lb_enable":           "true",
		"lb_port":             "6443",
		"vip_subnet":          "32",
		"cp_enable":           "false",
		KubeVIPEnvSvcEnable:   "true",
		KubeVIPEnvSvcElection: "false",
		"vip_leaderelection":  "false",
		"prometheus_server":   ":2112",
	}
}

// KubeVIPEnvOverrides are the environment values l changes from
// Harvester's chart values (what RKE2's HelmChartConfig passes).
func (l LoadBalancing) KubeVIPEnvOverrides() map[string]string {
	out := map[string]string{}
	if l.VIPInterface != "" {
		out[KubeVIPEnvInterface] = l.VIPInterface
	}
	if l.TrafficPolicyLocal {
		out[KubeVIPEnvSvcElection] = "true"
	}
	return out
}

// KubeVIPOnEveryNode reports whether kube-vip runs on every node rather
// than on control-plane nodes only (externalTrafficPolicy Local needs an
// announcer beside each Service's endpoints).
func (l LoadBalancing) KubeVIPOnEveryNode() bool { return l.TrafficPolicyLocal }

// kubeVIPEnv is the container environment, one entry per key in the
// chart's (sorted) order, then vip_nodename from the downward API (the
// chart's envValueFrom entries follow its env entries).
func kubeVIPEnv(l LoadBalancing) []corev1.EnvVar {
	env := kubeVIPChartEnv()
	for k, v := range l.KubeVIPEnvOverrides() {
		env[k] = v
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]corev1.EnvVar, len(keys))
	for i, k := range keys {
		out[i] = corev1.EnvVar{Name: k, Value: env[k]}
	}
	return append(out, corev1.EnvVar{Name: KubeVIPEnvNodeName, ValueFrom: KubeVIPNodeNameSource()})
}

// kubeVIPTolerations are Harvester's values: control-plane and etcd nodes.
func kubeVIPTolerations() []corev1.Toleration {
	return []corev1.Toleration{
		{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
		{Key: "node-role.kubernetes.io/etcd", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
	}
}

// KubeVIPRules are the chart's ClusterRole rules.
func KubeVIPRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(core, []string{"services/status"}, []string{"update"}),
		rule(core, []string{"services", "endpoints"}, []string{"list", "get", "watch", "update"}),
		rule(core, []string{"nodes"}, []string{"list", "get", "watch", "update", "patch"}),
		rule([]string{"coordination.k8s.io"}, []string{"leases"}, []string{"list", "get", "watch", "update", "create"}),
		rule([]string{"discovery.k8s.io"}, []string{"endpointslices"}, []string{"list", "get", "watch", "update"}),
		rule(core, []string{"pods"}, []string{"list"}),
	}
}

// KubeVIPObjects builds kube-vip as Harvester's chart renders it with
// Harvester's values (and o's load-balancing options): ServiceAccount,
// ClusterRole and binding, Role (secrets) and binding, DaemonSet.
func KubeVIPObjects(o Options) []runtime.Object {
	img := o.Versions.KubeVIP
	labels := o.labels(KubeVIPName, img.Tag)
	cr := clusterRole(KubeVIPName, labels, KubeVIPRules()...)
	cr.Annotations = map[string]string{"rbac.authorization.kubernetes.io/autoupdate": "true"}
	var affinity *corev1.Affinity
	if !o.LB.KubeVIPOnEveryNode() {
		affinity = controlPlaneAffinity()
	}
	ds := &appsv1.DaemonSet{
		TypeMeta:   typeMeta("apps/v1", "DaemonSet"),
		ObjectMeta: metav1.ObjectMeta{Name: KubeVIPName, Namespace: o.Namespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelName: KubeVIPName}},
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{
				Type:          appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromInt32(1))},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: KubeVIPName,
					HostNetwork:        true,
					Containers: []corev1.Container{{
						Name:            KubeVIPName,
						Image:           img.Ref(o.ImageRegistry),
						ImagePullPolicy: corev1.PullIfNotPresent,
						Args:            []string{"manager"},
						Env:             kubeVIPEnv(o.LB),
						SecurityContext: &corev1.SecurityContext{Capabilities: &corev1.Capabilities{
							Add:  []corev1.Capability{"NET_ADMIN", "NET_RAW"},
							Drop: []corev1.Capability{"ALL"},
						}},
					}},
					Tolerations: kubeVIPTolerations(),
					Affinity:    affinity,
				},
			},
		},
	}
	return []runtime.Object{
		serviceAccount(KubeVIPName, o.Namespace, labels),
		cr,
		clusterRoleBinding(KubeVIPName, KubeVIPName, KubeVIPName, o.Namespace, labels),
		&rbacv1.Role{
			TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "Role"),
			ObjectMeta: metav1.ObjectMeta{Name: KubeVIPName, Namespace: o.Namespace, Labels: labels},
			Rules:      []rbacv1.PolicyRule{rule(core, []string{"secrets"}, []string{"list", "get"})},
		},
		&rbacv1.RoleBinding{
			TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"),
			ObjectMeta: metav1.ObjectMeta{Name: KubeVIPName, Namespace: o.Namespace, Labels: labels},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: KubeVIPName},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: KubeVIPName, Namespace: o.Namespace}},
		},
		ds,
	}
}
