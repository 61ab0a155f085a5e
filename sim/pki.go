package sim

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"time"
)

// VirtAPIService is the Service in harvester-system that KubeVirt's
// subresources APIService points at (Harvester runs virt-api there).
const VirtAPIService = "virt-api"

// pki holds the simulated cluster's certificate authority and the keys the
// control plane needs. Everything is generated fresh for every start.
type pki struct {
	caCert    *x509.Certificate
	caKey     *ecdsa.PrivateKey
	CACertPEM []byte

	ServingCertPEM, ServingKeyPEM []byte // kube-apiserver serving certificate
	AdminCertPEM, AdminKeyPEM     []byte // client certificate in system:masters
	// SchedulerCertPEM/KeyPEM are kube-scheduler's client certificate:
	// user system:kube-scheduler, whom the apiserver's bootstrap RBAC
	// grants what the scheduler needs (ClusterRoles system:kube-scheduler
	// and system:volume-scheduler) and nothing more.
	SchedulerCertPEM, SchedulerKeyPEM []byte
	SAKeyPEM, SAPubPEM                []byte // service-account token signing key pair

	// The aggregation layer: kube-apiserver proxies subresources.kubevirt.io
	// to the simulator's virt-api with a client certificate of its own
	// front-proxy CA (the request-header CA), and trusts virt-api's serving
	// certificate through the APIService's caBundle (the cluster CA).
	FrontProxyCAPEM                       []byte
	ProxyClientCertPEM, ProxyClientKeyPEM []byte // CN front-proxy-client
}

// ProxyClientName is the common name of kube-apiserver's front-proxy client
// certificate, the one name an aggregated API server (virt-api) accepts request
// headers from (extension-apiserver-authentication).
const ProxyClientName = "front-proxy-client"

// SchedulerUser is kube-scheduler's user name, the one the bootstrap RBAC
// of kube-apiserver binds its roles to.
const SchedulerUser = "system:kube-scheduler"

func newPKI(now time.Time) (*pki, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "harvester-sim-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parse CA certificate: %w", err)
	}
	p := &pki{caCert: caCert, caKey: caKey, CACertPEM: pemBlock("CERTIFICATE", caDER)}

	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if p.ServingCertPEM, p.ServingKeyPEM, err = p.issue(serving, now, 2); err != nil {
		return nil, fmt.Errorf("issue serving certificate: %w", err)
	}
	admin := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "harvester-sim-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if p.AdminCertPEM, p.AdminKeyPEM, err = p.issue(admin, now, 3); err != nil {
		return nil, fmt.Errorf("issue admin certificate: %w", err)
	}
	scheduler := &x509.Certificate{
		Subject:     pkix.Name{CommonName: SchedulerUser},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if p.SchedulerCertPEM, p.SchedulerKeyPEM, err = p.issue(scheduler, now, 5); err != nil {
		return nil, fmt.Errorf("issue kube-scheduler certificate: %w", err)
	}

	if err := p.issueAggregation(now); err != nil {
		return nil, err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate service-account key: %w", err)
	}
	saPub, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("encode service-account public key: %w", err)
	}
	p.SAKeyPEM = pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(saKey))
	p.SAPubPEM = pemBlock("PUBLIC KEY", saPub)
	return p, nil
}

// issueAggregation makes the front-proxy CA and kube-apiserver's proxy
// client certificate.
func (p *pki) issueAggregation(now time.Time) error {
	front, err := newAuthority("harvester-sim-front-proxy-ca", now)
	if err != nil {
		return err
	}
	p.FrontProxyCAPEM = front.certPEM
	client := &x509.Certificate{Subject: pkix.Name{CommonName: ProxyClientName}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if p.ProxyClientCertPEM, p.ProxyClientKeyPEM, err = front.issue(client, now, 2); err != nil {
		return fmt.Errorf("issue front-proxy client certificate: %w", err)
	}
	return nil
}

// authority is a certificate authority other than the cluster's.
type authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newAuthority(name string, now time.Time) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate %s key: %w", name, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create %s certificate: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse %s certificate: %w", name, err)
	}
	return &authority{cert: cert, key: key, certPEM: pemBlock("CERTIFICATE", der)}, nil
}

func (a *authority) issue(tmpl *x509.Certificate, now time.Time, serial int64) (certPEM, keyPEM []byte, err error) {
	return issueWith(a.cert, a.key, tmpl, now, serial)
}

// issue signs tmpl with the CA and returns the certificate and key as PEM.
func (p *pki) issue(tmpl *x509.Certificate, now time.Time, serial int64) (certPEM, keyPEM []byte, err error) {
	return issueWith(p.caCert, p.caKey, tmpl, now, serial)
}

func issueWith(caCert *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate, now time.Time, serial int64) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(365 * 24 * time.Hour)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("EC PRIVATE KEY", keyDER), nil
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}

// kubeletCert is a host kubelet's serving certificate for its address ip,
// signed by the cluster's CA, as RKE2 issues it (controllers.KubeletCert).
func (p *pki) kubeletCert(host, ip string) (certPEM, keyPEM []byte, err error) {
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: host}, IPAddresses: []net.IP{net.ParseIP(ip)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	return p.issue(tmpl, time.Now(), serial.Int64()+100)
}
