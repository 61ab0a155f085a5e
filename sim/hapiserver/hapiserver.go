// Package hapiserver runs Harvester's own API server, with its controllers,
// for the simulator: bin/harvester (Harvester v1.8.1's main package, built
// as it is by test/tools/build.sh) in HCI mode with embedded Rancher, as
// Harvester's chart runs it (deploy/charts/harvester/templates/
// deployment.yaml), as ServiceAccount harvester (sim/hwebhook's, bound to
// cluster-admin) with a Pod's ServiceAccount files, and with what it
// needs of the components a Harvester cluster has around it: the
// cattle-system namespace, ConfigMap vip, Longhorn's VolumeSnapshotClasses.
package hapiserver

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
	"github.com/harvester-kit/harvester-machine/sim/hwebhook"
)

// Harvester v1.8.1's names.
const (
	// Binary is the API server's executable in the bin dir.
	Binary = "harvester"
	// LeaseNamespace and LeaseName: the leader Lease its controllers run
	// under (pkg/controller/master/setup.go, wrangler's leader.RunOrDie in
	// namespace kube-system when none is given).
	LeaseNamespace = "kube-system"
	LeaseName      = "harvester-controllers"
	// NodeFinalizer is what wrangler adds to every Node its node-remove
	// controller handles (pkg/controller/master/node/node_remove_controller.go,
	// OnRemove "node-remove-controller"): once a Node carries it, the
	// controllers registered under the Lease have started.
	NodeFinalizer = "wrangler.cattle.io/node-remove-controller"
	// RancherNamespace is Rancher's namespace, where the API server keeps
	// its additional CA Secret (pkg/server: harvester-additional-ca).
	RancherNamespace = "cattle-system"
	// VIPConfigMap is the chart's ConfigMap vip (templates/configmap.yaml),
	// which its master controllers' setup reads.
	VIPConfigMap = "vip"
)

// Options configure the API server's run.
type Options struct {
	// Dir holds its ServiceAccount files and kubeconfig.
	Dir string
	// Namespace is Harvester's (harvester-system).
	Namespace string
	// APIServer is kube-apiserver's URL; CACert the cluster CA.
	APIServer string
	CACert    []byte
	Kube      kubernetes.Interface
	Dyn       dynamic.Interface
	// Labels mark what the simulator creates.
	Labels map[string]string
}

// ServiceAccountDir is the directory bound at podenv.ServiceAccountDir in
// the API server's mount namespace.
func (o Options) ServiceAccountDir() string { return filepath.Join(o.Dir, "serviceaccount") }

func (o Options) kubeconfigPath() string { return filepath.Join(o.Dir, "harvester.kubeconfig") }

// Args are the API server's flags: the chart's Deployment environment
// (HCI_MODE, RANCHER_EMBEDDED, NAMESPACE, HARVESTER_SERVER_HTTP(S)_PORT)
// as the flags main.go binds them to, on free ports, and no profiler (its
// default 0.0.0.0:6060 would be shared by every simulator of a network
// namespace).
func (o Options) Args(httpPort, httpsPort int) []string {
	return []string{"--kubeconfig", o.kubeconfigPath(), "--namespace", o.Namespace,
		"--hci-mode", "--rancher-embedded",
		"--http-port", strconv.Itoa(httpPort), "--https-port", strconv.Itoa(httpsPort),
		"--profile-listen-address", ""}
}

// steve's refresh timing (github.com/rancher/steve v0.7.17, which Harvester
// v1.8.1 pins: pkg/schema/definitions/schema.go reads both with
// strconv.Atoi, the delay in seconds, the period in minutes). Its
// schemaDefinitions handler, which only Harvester's UI reads, fetches
// kube-apiserver's whole /openapi/v2 CRDRefreshDelaySeconds after the last
// CRD or APIService event (a debounce; default 2) and again every
// BackgroundRefreshMinutes (a ticker; default 10, and it must be above 0).
// No simulator lives an hour and nothing it starts reads
// schemaDefinitions, so neither fetch happens; the schema controller that
// serves /v1/harvester (pkg/controllers/schema) has no such setting and
// refreshes as before. The chart passes them to the container through its
// containers.apiserver.env values.
const (
	CRDRefreshDelaySeconds   = 3600
	BackgroundRefreshMinutes = 1440
)

// Env is the API server's container environment beyond what Args set:
// steve's refresh timing.
func Env() []string {
	return []string{
		"CATTLE_CRD_REFRESH_DELAY_SECONDS=" + strconv.Itoa(CRDRefreshDelaySeconds),
		"CATTLE_BACKGROUND_REFRESH_MINUTES=" + strconv.Itoa(BackgroundRefreshMinutes),
	}
}

// volumeSnapshotClasses are Longhorn's backup class (longhorn) and
// Harvester's chart's snapshot class (templates/longhorn-
// volumesnapshotclass.yaml), which the default settings the API server
// creates name (Harvester's webhook refuses them otherwise).
var volumeSnapshotClasses = map[string]string{"longhorn": "bak", "longhorn-snapshot": "snap"}

// VolumeSnapshotClassResource is the kind of volumeSnapshotClasses;
// SettingResource Harvester's settings.
var (
	VolumeSnapshotClassResource = schema.GroupVersionResource{Group: "snapshot.storage.k8s.io", Version: "v1", Resource: "volumesnapshotclasses"}
	SettingResource             = schema.GroupVersionResource{Group: "harvesterhci.io", Version: "v1beta1", Resource: "settings"}
)

// UpgradeCheckerSetting (pkg/settings/settings.go) is set to "false"
// before the API server starts: its version syncer otherwise posts the
// cluster's version to harvester-upgrade-responder.rancher.io, and
// nothing a simulator starts reaches out of the machine.
const UpgradeCheckerSetting = "upgrade-checker-enabled"

// Objects are what the API server reads of a Harvester cluster's other
// components: Rancher's namespace, the chart's ConfigMap vip (its
// values.yaml defaults) and Longhorn's VolumeSnapshotClasses; and the
// upgrade checker's setting, off.
func Objects(namespace string, labels map[string]string) (*corev1.Namespace, *corev1.ConfigMap, []*unstructured.Unstructured) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: RancherNamespace, Labels: labels}}
	vip := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: VIPConfigMap, Namespace: namespace, Labels: labels},
		Data: map[string]string{"enabled": "false", "serviceType": "LoadBalancer", "ip": "", "mode": "static", "hwAddress": "", "loadBalancerIP": ""}}
	var classes []*unstructured.Unstructured
	for _, name := range slices.Sorted(maps.Keys(volumeSnapshotClasses)) {
		c := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "snapshot.storage.k8s.io/v1", "kind": "VolumeSnapshotClass",
			"driver": "driver.longhorn.io", "deletionPolicy": "Delete",
			"parameters": map[string]any{"type": volumeSnapshotClasses[name]},
		}}
		c.SetName(name)
		c.SetLabels(labels)
		classes = append(classes, c)
	}
	checker := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "harvesterhci.io/v1beta1", "kind": "Setting", "value": "false",
	}}
	checker.SetName(UpgradeCheckerSetting)
	checker.SetLabels(labels)
	return ns, vip, append(classes, checker)
}

// Prepare creates the objects, the ServiceAccount and its binding, and
// writes the Pod's ServiceAccount files and a kubeconfig naming them. The
// VolumeSnapshotClass and Setting CRDs must be established.
func Prepare(ctx context.Context, o Options) error {
	ns, vip, custom := Objects(o.Namespace, o.Labels)
	_, err := o.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if err == nil || apierrors.IsAlreadyExists(err) {
		_, err = o.Kube.CoreV1().ConfigMaps(o.Namespace).Create(ctx, vip, metav1.CreateOptions{})
	}
	for _, c := range custom {
		if err == nil || apierrors.IsAlreadyExists(err) {
			r := VolumeSnapshotClassResource
			if c.GetKind() == "Setting" {
				r = SettingResource
			}
			_, err = o.Dyn.Resource(r).Create(ctx, c, metav1.CreateOptions{})
		}
	}
	if err == nil || apierrors.IsAlreadyExists(err) {
		err = hwebhook.Account(ctx, o.Kube, o.Namespace, o.Labels)
	}
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("harvester API server: objects: %w", err)
	}
	if err := hwebhook.PodFiles(ctx, o.Kube, o.Namespace, o.ServiceAccountDir(), o.kubeconfigPath(), o.APIServer, o.CACert); err != nil {
		return fmt.Errorf("harvester API server: %w", err)
	}
	return nil
}

// WaitControllers waits until the API server holds its Lease and its
// controllers have started: Node node carries NodeFinalizer.
func WaitControllers(ctx context.Context, kube kubernetes.Interface, node string) error {
	leases := kube.CoordinationV1().Leases(LeaseNamespace)
	lk := kubeapi.KindOf[*coordinationv1.LeaseList]("Lease", &coordinationv1.Lease{}, leases)
	if _, err := kubeapi.Wait(ctx, lk, LeaseNamespace, LeaseName, 0, func(l *coordinationv1.Lease) (bool, error) {
		return l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", nil
	}); err != nil {
		return fmt.Errorf("harvester API server: wait for Lease %s/%s: %w", LeaseNamespace, LeaseName, err)
	}
	nodes := kube.CoreV1().Nodes()
	nk := kubeapi.KindOf[*corev1.NodeList]("Node", &corev1.Node{}, nodes)
	if _, err := kubeapi.Wait(ctx, nk, "", node, 0, func(n *corev1.Node) (bool, error) {
		return n != nil && slices.Contains(n.Finalizers, NodeFinalizer), nil
	}); err != nil {
		return fmt.Errorf("harvester API server: wait for its controllers (finalizer %s on Node %s): %w", NodeFinalizer, node, err)
	}
	return nil
}
