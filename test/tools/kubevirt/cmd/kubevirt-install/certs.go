package main

import (
	"crypto/ecdsa"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"kubevirt.io/kubevirt/pkg/certificates/bootstrap"
	"kubevirt.io/kubevirt/pkg/certificates/triple"
	"kubevirt.io/kubevirt/pkg/certificates/triple/cert"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/components"
	"kubevirt.io/kubevirt/pkg/virt-operator/resource/generate/install"
)

// certDuration is how long the certificates are valid: virt-operator's
// default (KubeVirt CR spec.certificateRotateStrategy unset) gives the
// CAs 7 days and the components 24 hours and rotates them; nothing rotates
// here, so every certificate gets the CA's 7 days.
const certDuration = 7 * 24 * time.Hour

// certificates are the populated Secrets and CA ConfigMaps.
type certificates struct {
	secrets    []*corev1.Secret
	configMaps []*corev1.ConfigMap
	caBundle   []byte // kubevirt-ca, PEM
}

// populateCertificates fills the strategy's certificate Secrets as
// virt-operator does (pkg/virt-operator/resource/apply/core.go): the two
// CAs first, then every component certificate signed by kubevirt-ca, and
// the CA ConfigMaps' bundles. virt-api's serving certificate also names
// --virt-api-ip, where the API server reaches it.
func populateCertificates(strategy *install.Strategy, o options) (*certificates, error) {
	duration := &metav1.Duration{Duration: certDuration}
	secrets := strategy.CertificateSecrets()
	cas := map[string]*tls.Certificate{}
	for _, s := range secrets {
		if s.Name != components.KubeVirtCASecretName && s.Name != components.KubeVirtExportCASecretName {
			continue
		}
		if err := components.PopulateSecretWithCertificate(s, nil, duration); err != nil {
			return nil, fmt.Errorf("certificate %s: %w", s.Name, err)
		}
		ca, err := components.LoadCertificates(s)
		if err != nil {
			return nil, fmt.Errorf("certificate %s: %w", s.Name, err)
		}
		cas[s.Name] = ca
	}
	ca := cas[components.KubeVirtCASecretName]
	if ca == nil || cas[components.KubeVirtExportCASecretName] == nil {
		return nil, errors.New("certificates: the install strategy has no kubevirt-ca or kubevirt-export-ca Secret")
	}
	for _, s := range secrets {
		if cas[s.Name] != nil {
			continue
		}
		var err error
		if s.Name == components.VirtApiCertSecretName {
			err = populateVirtAPI(s, ca, o.virtAPIIP)
		} else {
			err = components.PopulateSecretWithCertificate(s, ca, duration)
		}
		if err != nil {
			return nil, fmt.Errorf("certificate %s: %w", s.Name, err)
		}
	}
	c := &certificates{secrets: secrets, caBundle: cert.EncodeCertPEM(ca.Leaf)}
	for _, cm := range strategy.ConfigMaps() {
		if issuer := cas[cm.Name]; issuer != nil {
			cm.Data = map[string]string{components.CABundleKey: string(cert.EncodeCertPEM(issuer.Leaf))}
		}
		c.configMaps = append(c.configMaps, cm)
	}
	return c, nil
}

// populateVirtAPI makes virt-api's serving certificate as KubeVirt's own
// population strategy does, with ip as an IP SAN.
func populateVirtAPI(s *corev1.Secret, ca *tls.Certificate, ip string) error {
	key, ok := ca.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return errors.New("kubevirt-ca's key is not ECDSA")
	}
	kp, err := triple.NewServerKeyPair(&triple.KeyPair{Key: key, Cert: ca.Leaf},
		fmt.Sprintf(components.LocalPodDNStemplateString, components.VirtApiServiceName, s.Namespace),
		components.VirtApiServiceName, s.Namespace, components.CaClusterLocal, []string{ip}, nil, certDuration)
	if err != nil {
		return err
	}
	s.Data = map[string][]byte{bootstrap.CertBytesValue: cert.EncodeCertPEM(kp.Cert), bootstrap.KeyBytesValue: cert.EncodePrivateKeyPEM(kp.Key)}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations["kubevirt.io/duration"] = (&metav1.Duration{Duration: certDuration}).Duration.String()
	return nil
}

// writeFiles writes each Secret's tls.crt and tls.key into dir/<secret>/,
// and kubevirt-ca's bundle into dir/ca-bundle.crt: the files the binaries'
// flags name.
func (c *certificates) writeFiles(dir string) error {
	for _, s := range c.secrets {
		sub := filepath.Join(dir, s.Name)
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return fmt.Errorf("write certificates: %w", err)
		}
		for k, v := range s.Data {
			if err := os.WriteFile(filepath.Join(sub, k), v, 0o600); err != nil {
				return fmt.Errorf("write certificates: %w", err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "ca-bundle.crt"), c.caBundle, 0o600); err != nil {
		return fmt.Errorf("write certificates: %w", err)
	}
	return nil
}
