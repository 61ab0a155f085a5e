package addons

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const (
	kubeletDir   = "/var/lib/kubelet"
	csiSocketDir = kubeletDir + "/harvester-plugins/" + CSIDriverName
)

// CSIObjects builds the CSI driver: RBAC, CSIDriver, node DaemonSet,
// controller Deployment and the default StorageClass "harvester".
func CSIObjects(o Options) []runtime.Object {
	v := o.Versions
	labels := o.labels(CSIName, v.CSIDriver.Tag)
	rules := []rbacv1.PolicyRule{
		rule([]string{"coordination.k8s.io"}, []string{"leases"}, all),
		rule([]string{"storage.k8s.io"}, []string{"csistoragecapacities"}, all),
		rule(core, []string{"persistentvolumes", "persistentvolumeclaims"}, all),
		rule(core, []string{"persistentvolumeclaims/status"}, []string{"patch"}),
		rule([]string{"storage.k8s.io"}, []string{"storageclasses", "csinodes"}, readOnly),
		// csi-provisioner v5 and csi-resizer v2 read VolumeAttributesClasses.
		rule([]string{"storage.k8s.io"}, []string{"volumeattributesclasses"}, readOnly),
		rule([]string{"storage.k8s.io"}, []string{"volumeattachments"}, []string{"get", "list", "watch", "patch"}),
		rule([]string{"storage.k8s.io"}, []string{"volumeattachments/status"}, []string{"patch"}),
		rule([]string{"snapshot.storage.k8s.io"}, []string{"volumesnapshots", "volumesnapshotcontents", "volumesnapshotclasses", "volumesnapshotcontents/status"}, all),
		rule(core, []string{"events"}, readEdit),
		rule(core, []string{"pods", "nodes"}, readOnly),
		rule([]string{"apps"}, []string{"replicasets"}, []string{"get"}),
	}
	return []runtime.Object{
		serviceAccount(CSIName, o.Namespace, labels),
		clusterRole(CSIName, labels, rules...),
		clusterRoleBinding(CSIName, CSIName, CSIName, o.Namespace, labels),
		&storagev1.CSIDriver{
			TypeMeta:   typeMeta("storage.k8s.io/v1", "CSIDriver"),
			ObjectMeta: metav1.ObjectMeta{Name: CSIDriverName, Labels: labels},
			Spec: storagev1.CSIDriverSpec{
				AttachRequired:       ptr(true),
				PodInfoOnMount:       ptr(true),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
			},
		},
		csiNodeDaemonSet(o, labels),
		csiControllerDeployment(o, labels),
		storageClass(o, labels),
	}
}

func socketMount() corev1.VolumeMount {
	return corev1.VolumeMount{Name: "socket-dir", MountPath: "/csi/"}
}

func hostPathVolume(name, path string, t corev1.HostPathType) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: ptr(t)}}}
}

var (
	addressEnv   = corev1.EnvVar{Name: "ADDRESS", Value: "/csi/csi.sock"}
	podNamespace = corev1.EnvVar{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}
)

func csiNodeDaemonSet(o Options, labels map[string]string) *appsv1.DaemonSet {
	v := o.Versions
	selector := map[string]string{LabelName: CSIName, "component": "csi-node"}
	podLabels := merge(labels, selector)
	bidir := ptr(corev1.MountPropagationBidirectional)
	return &appsv1.DaemonSet{
		TypeMeta:   typeMeta("apps/v1", "DaemonSet"),
		ObjectMeta: metav1.ObjectMeta{Name: CSIName, Namespace: o.Namespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels},
				Spec: corev1.PodSpec{
					ServiceAccountName: CSIName,
					HostPID:            true,
					PriorityClassName:  "system-node-critical",
					NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
					Tolerations:        tolerations(),
					Containers: []corev1.Container{
						{
							Name:            "node-driver-registrar",
							Image:           v.NodeDriverRegistrar.Ref(o.ImageRegistry),
							ImagePullPolicy: corev1.PullIfNotPresent,
							Args:            []string{"--v=2", "--csi-address=$(ADDRESS)", "--kubelet-registration-path=" + csiSocketDir + "/csi.sock"},
							Env:             []corev1.EnvVar{addressEnv},
							SecurityContext: &corev1.SecurityContext{Privileged: ptr(true)},
							VolumeMounts:    []corev1.VolumeMount{socketMount(), {Name: "registration-dir", MountPath: "/registration"}},
						},
						{
							Name:            CSIName,
							Image:           v.CSIDriver.Ref(o.ImageRegistry),
							ImagePullPolicy: corev1.PullIfNotPresent,
							Args:            csiDriverArgs(o),
							Env: []corev1.EnvVar{
								{Name: "NODE_ID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
								{Name: "CSI_ENDPOINT", Value: "unix:///csi/csi.sock"},
							},
							SecurityContext: &corev1.SecurityContext{
								Privileged:               ptr(true),
								AllowPrivilegeEscalation: ptr(true),
								Capabilities:             &corev1.Capabilities{Add: []corev1.Capability{"SYS_ADMIN"}},
							},
							VolumeMounts: []corev1.VolumeMount{
								{Name: "cloud-config", MountPath: "/var/lib/harvester", ReadOnly: true},
								socketMount(),
								{Name: "kubernetes-csi-dir", MountPath: kubeletDir + "/plugins/kubernetes.io/csi", MountPropagation: bidir},
								{Name: "pods-mount-dir", MountPath: kubeletDir + "/pods", MountPropagation: bidir},
								{Name: "host-dev", MountPath: "/dev"},
								{Name: "host-sys", MountPath: "/sys"},
								{Name: "host", MountPath: "/rootfs", MountPropagation: bidir},
								{Name: "lib-modules", MountPath: "/lib/modules", ReadOnly: true},
							},
						},
					},
					Volumes: []corev1.Volume{
						{Name: "cloud-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName:  o.CloudConfigSecret,
							Items:       []corev1.KeyToPath{{Key: CloudConfigKey, Path: "cloud-provider-config"}},
							DefaultMode: ptr(int32(0o400)),
						}}},
						hostPathVolume("socket-dir", csiSocketDir, corev1.HostPathDirectoryOrCreate),
						hostPathVolume("registration-dir", kubeletDir+"/plugins_registry", corev1.HostPathDirectory),
						hostPathVolume("kubernetes-csi-dir", kubeletDir+"/plugins/kubernetes.io/csi", corev1.HostPathDirectoryOrCreate),
						hostPathVolume("pods-mount-dir", kubeletDir+"/pods", corev1.HostPathDirectoryOrCreate),
						hostPathVolume("host-dev", "/dev", corev1.HostPathUnset),
						hostPathVolume("host-sys", "/sys", corev1.HostPathUnset),
						hostPathVolume("host", "/", corev1.HostPathUnset),
						hostPathVolume("lib-modules", "/lib/modules", corev1.HostPathUnset),
					},
				},
			},
		},
	}
}

func csiDriverArgs(o Options) []string {
	args := []string{"--nodeid=$(NODE_ID)", "--endpoint=$(CSI_ENDPOINT)", "--kubeconfig=/var/lib/harvester/cloud-provider-config"}
	if o.HostStorageClass != "" {
		args = append(args, CSIHostStorageClassFlag+"="+o.HostStorageClass)
	}
	return args
}

func sidecar(name string, img Image, o Options, extra ...string) corev1.Container {
	args := append([]string{"--v=2", "--csi-address=$(ADDRESS)", "--timeout=1m50s", "--leader-election", "--leader-election-namespace=$(POD_NAMESPACE)"}, extra...)
	return corev1.Container{
		Name:            name,
		Image:           img.Ref(o.ImageRegistry),
		ImagePullPolicy: corev1.PullIfNotPresent,
		Args:            args,
		Env:             []corev1.EnvVar{addressEnv, podNamespace},
		VolumeMounts:    []corev1.VolumeMount{socketMount()},
	}
}

func csiControllerDeployment(o Options, labels map[string]string) *appsv1.Deployment {
	v := o.Versions
	selector := map[string]string{LabelName: CSIName, "component": "csi-controllers"}
	aff := controlPlaneAffinity()
	aff.PodAntiAffinity = &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
		Weight: 100,
		PodAffinityTerm: corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: selector},
			TopologyKey:   corev1.LabelHostname,
		},
	}}}
	return &appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: metav1.ObjectMeta{Name: CSIName + "-controllers", Namespace: o.Namespace, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr(o.CSIReplicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: merge(labels, selector)},
				Spec: corev1.PodSpec{
					ServiceAccountName: CSIName,
					PriorityClassName:  "system-cluster-critical",
					NodeSelector:       map[string]string{"kubernetes.io/os": "linux"},
					Tolerations:        tolerations(),
					Affinity:           aff,
					Containers: []corev1.Container{
						sidecar("csi-provisioner", v.Provisioner, o, "--default-fstype=ext4"),
						sidecar("csi-attacher", v.Attacher, o),
						sidecar("csi-resizer", v.Resizer, o),
						sidecar("csi-snapshotter", v.Snapshotter, o),
					},
					Volumes: []corev1.Volume{hostPathVolume("socket-dir", csiSocketDir, corev1.HostPathDirectoryOrCreate)},
				},
			},
		},
	}
}

func storageClass(o Options, labels map[string]string) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		TypeMeta: typeMeta("storage.k8s.io/v1", "StorageClass"),
		ObjectMeta: metav1.ObjectMeta{
			Name:        StorageClass,
			Labels:      labels,
			Annotations: map[string]string{AnnDefaultStorageClass: "true"},
		},
		Provisioner:          CSIDriverName,
		AllowVolumeExpansion: ptr(true),
		ReclaimPolicy:        ptr(corev1.PersistentVolumeReclaimDelete),
		VolumeBindingMode:    ptr(storagev1.VolumeBindingImmediate),
	}
	if o.HostStorageClass != "" {
		sc.Parameters = map[string]string{ParamHostStorageClass: o.HostStorageClass}
	}
	return sc
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
