// Package kubevip runs the real kube-vip (bin/kube-vip, a pinned test tool)
// for the simulated guest clusters: one process per node the guest's
// kube-vip DaemonSet would schedule a pod on, each in a network namespace
// of its own (the node's) joined to the guest network by a veth, with the
// DaemonSet's environment and arguments and a token of its ServiceAccount.
package kubevip

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// DaemonSetName is the DaemonSet (in kube-system) whose pods the simulator
// runs as real kube-vip processes; Image is the binary's name in the image
// (its entrypoint).
const (
	DaemonSetName = "kube-vip"
	Entrypoint    = "/kube-vip"
)

// Node is what the runner knows of a guest node: its Node object and the
// address its VM has on the guest network.
type Node struct {
	Node *corev1.Node
	IP   string
}

// Container is the kube-vip container of the DaemonSet's pod template.
func Container(ds *appsv1.DaemonSet) (*corev1.Container, error) {
	cs := ds.Spec.Template.Spec.Containers
	for i := range cs {
		if cs[i].Name == DaemonSetName {
			return &cs[i], nil
		}
	}
	if len(cs) == 1 {
		return &cs[0], nil
	}
	return nil, fmt.Errorf("daemonset %s/%s has no container %q", ds.Namespace, ds.Name, DaemonSetName)
}

// PodInfo is what the downward API gives the pod on a node.
type PodInfo struct {
	Name, Namespace, NodeName, HostIP, ServiceAccount string
}

// Environment is the container's environment as the kubelet builds it:
// each env entry (value, or the downward API's fieldRef), in order. Other
// sources (Secrets, ConfigMaps, resource fields, envFrom) are reported as
// errors: the simulator does not resolve them.
func Environment(c *corev1.Container, pod PodInfo) ([]string, error) {
	var out []string
	var errs []error
	if len(c.EnvFrom) > 0 {
		errs = append(errs, errors.New("envFrom: not resolved by the simulator"))
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			out = append(out, e.Name+"="+e.Value)
			continue
		}
		if e.ValueFrom.FieldRef == nil {
			errs = append(errs, fmt.Errorf("env %s: only fieldRef (the downward API) is resolved by the simulator", e.Name))
			continue
		}
		v, err := fieldValue(e.ValueFrom.FieldRef.FieldPath, pod)
		if err != nil {
			errs = append(errs, fmt.Errorf("env %s: %w", e.Name, err))
			continue
		}
		out = append(out, e.Name+"="+v)
	}
	return out, errors.Join(errs...)
}

// fieldValue is the downward API's value of a pod field (hostNetwork: the
// pod's IP is the node's).
func fieldValue(path string, pod PodInfo) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "spec.nodeName":
		return pod.NodeName, nil
	case "spec.serviceAccountName":
		return pod.ServiceAccount, nil
	case "status.hostIP", "status.podIP", "status.hostIPs", "status.podIPs":
		return pod.HostIP, nil
	}
	return "", fmt.Errorf("fieldRef %s is not resolved by the simulator", path)
}

// Argv is the process the container runs: its command (the image's
// entrypoint, /kube-vip, when empty) with binary standing for the
// entrypoint, then its args.
func Argv(c *corev1.Container, binary string) ([]string, error) {
	cmd := c.Command
	if len(cmd) == 0 {
		cmd = []string{Entrypoint}
	}
	if cmd[0] != Entrypoint && cmd[0] != strings.TrimPrefix(Entrypoint, "/") {
		return nil, fmt.Errorf("container command %q: the simulator runs only kube-vip's entrypoint %s", cmd[0], Entrypoint)
	}
	return append(append([]string{binary}, cmd[1:]...), c.Args...), nil
}

// PodName is the daemon pod's name on a node: the DaemonSet's name and a
// hash of the node's name, as stable as the real pod's for one node.
func PodName(ds *appsv1.DaemonSet, node string) string {
	sum := sha256.Sum256([]byte(node))
	return ds.Name + "-" + hex.EncodeToString(sum[:])[:5]
}

// TemplateHash identifies the pod template: a change (a new env entry, an
// argument) restarts the processes, as a rolling update replaces the pods.
func TemplateHash(ds *appsv1.DaemonSet) string {
	data, _ := json.Marshal(ds.Spec.Template.Spec)
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:8])
}
