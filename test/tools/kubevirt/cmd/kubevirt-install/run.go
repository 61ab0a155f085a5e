package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/install"
	operatorutil "kubevirt.io/kubevirt/pkg/virt-operator/util"
)

// Files written into --out, each a stream of JSON objects (YAML too, and
// four times quicker to decode than YAML for megabytes of CRD schema).
// harvester-sim creates them in this order: CRDs (then waits until they
// are Established), RBAC and certificates, and, once virt-api answers, its
// webhooks and APIServices.
const (
	crdsFile        = "crds.json"
	rbacFile        = "rbac.json"
	certsFile       = "certs.json"
	webhooksFile    = "webhooks.json"
	apiServicesFile = "apiservices.json"
	// policiesFile holds the ValidatingAdmissionPolicy that lets
	// virt-handler change only its own Node; written, not applied by
	// harvester-sim (its hosts' virt-handler has no per-node token).
	policiesFile = "policies.json"
)

func run(o options) error {
	kv := &v1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: o.namespace}}
	strategy, err := install.GenerateCurrentInstallStrategy(operatorutil.GetTargetConfigFromKV(kv), "", o.namespace)
	if err != nil {
		return fmt.Errorf("generate install strategy: %w", err)
	}
	if err := os.MkdirAll(o.out, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", o.out, err)
	}
	kvCRD, err := components.NewKubeVirtCrd()
	if err != nil {
		return fmt.Errorf("KubeVirt CRD: %w", err)
	}
	if err := write(o.out, crdsFile, kvCRD, strategy.CRDs()); err != nil {
		return err
	}
	if err := write(o.out, rbacFile, components.NewKubeVirtPriorityClassCR(), strategy.ServiceAccounts(),
		strategy.ClusterRoles(), strategy.ClusterRoleBindings(), strategy.Roles(), strategy.RoleBindings()); err != nil {
		return err
	}
	if err := write(o.out, policiesFile, strategy.ValidatingAdmissionPolicies(), strategy.ValidatingAdmissionPolicyBindings()); err != nil {
		return err
	}
	pki, err := populateCertificates(strategy, o)
	if err != nil {
		return err
	}
	if err := write(o.out, certsFile, pki.secrets, pki.configMaps); err != nil {
		return err
	}
	if err := pki.writeFiles(filepath.Join(o.out, "pki")); err != nil {
		return err
	}
	url := fmt.Sprintf("https://%s", hostPort(o.virtAPIIP, o.virtAPIPort))
	if err := write(o.out, webhooksFile, validatingByURL(strategy.ValidatingWebhookConfigurations(), url, pki.caBundle),
		mutatingByURL(strategy.MutatingWebhookConfigurations(), url, pki.caBundle)); err != nil {
		return err
	}
	return write(o.out, apiServicesFile, virtAPIService(o), apiServicesAt(strategy.APIServices(), o.virtAPIPort, pki.caBundle))
}

// write puts every object of objs (single objects or slices of them) into
// dir/name as a stream of JSON objects, one a line.
func write(dir, name string, objs ...any) error {
	var b bytes.Buffer
	for _, o := range flatten(objs) {
		j, err := json.Marshal(o)
		if err != nil {
			return fmt.Errorf("encode %s: %w", name, err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
