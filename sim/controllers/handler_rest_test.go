package controllers

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

type testCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

// issue makes a certificate named cn for usage, signed by parent (nil:
// self-signed CA).
func issue(t *testing.T, cn string, usage x509.ExtKeyUsage, parent *testCert) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	signer, signerKey := tmpl, key
	if parent == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	} else {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCert{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (c *testCert) keyPEM(t *testing.T) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func (c *testCert) tls(t *testing.T) tls.Certificate {
	t.Helper()
	pair, err := tls.X509KeyPair(c.pem, c.keyPEM(t))
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

// TestHandlerTLS: the simulated virt-handler serves with its Secret's
// certificate and accepts only clients KubeVirt's handler server accepts
// (pkg/util/tls SetupTLSForServer: a certificate of kubevirt-ca, usage
// client auth, named kubevirt.io:system:client:virt-handler).
func TestHandlerTLS(t *testing.T) {
	ca := issue(t, "kubevirt.io@1", x509.ExtKeyUsageAny, nil)
	server := issue(t, "kubevirt.io:system:node:virt-handler", x509.ExtKeyUsageServerAuth, ca)
	s := &sim{kube: fake.NewClientset(
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: handlerServerCerts, Namespace: HandlerNamespace},
			Data: map[string][]byte{corev1.TLSCertKey: server.pem, corev1.TLSPrivateKeyKey: server.keyPEM(t)}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kubevirtCAConfigMap, Namespace: HandlerNamespace},
			Data: map[string]string{"ca-bundle": string(ca.pem)}})}
	other := issue(t, "other-ca", x509.ExtKeyUsageAny, nil)
	for _, tc := range []struct {
		name   string
		client *testCert
		want   string // "" accepted, else part of the handshake error
	}{
		{"virt-api's handler client certificate", issue(t, handlerClientCN, x509.ExtKeyUsageClientAuth, ca), ""},
		{"no client certificate", nil, "certificate required"},
		{"another component's name", issue(t, "kubevirt.io:system:client:virt-controller", x509.ExtKeyUsageClientAuth, ca), "bad certificate"},
		{"a server certificate", issue(t, handlerClientCN, x509.ExtKeyUsageServerAuth, ca), "bad certificate"},
		{"another CA", issue(t, handlerClientCN, x509.ExtKeyUsageClientAuth, other), "unknown certificate authority"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := handshake(t, s.handlerTLS(), tc.client, ca)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("handshake: %v, want %q", err, tc.want)
			}
		})
	}
}

// handshake connects a client with cert (nil: none), verifying the
// server's certificate against ca, and reads once so that the server's
// verdict on the client arrives (TLS 1.3).
func handshake(t *testing.T, srv *tls.Config, cert *testCert, ca *testCert) error {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	go func() {
		defer b.Close()
		conn := tls.Server(b, srv)
		if conn.Handshake() == nil {
			_, _ = conn.Write([]byte("ok"))
		}
	}()
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: roots, ServerName: "ignored",
		InsecureSkipVerify: true, //nolint:gosec // as KubeVirt's client; checked below
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			c, err := x509.ParseCertificate(raw[0])
			if err != nil {
				return err
			}
			_, err = c.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
			return err
		}}
	if cert != nil { // sent whatever CAs the server names, as an attacker would
		pair := cert.tls(t)
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
	}
	conn := tls.Client(a, cfg)
	if err := conn.Handshake(); err != nil {
		return err
	}
	buf := make([]byte, 2)
	_, err := conn.Read(buf)
	return err
}

// TestHandlerAddressTakenMovesOn: two simulators in one network namespace
// have the same host names; the second host server takes the next address.
func TestHandlerAddressTakenMovesOn(t *testing.T) {
	first, err := listenHandler("harvester-node-0")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := listenHandler("harvester-node-0")
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if first.Addr().String() == second.Addr().String() || !strings.HasPrefix(second.Addr().String(), "127.52.") {
		t.Errorf("addresses %s and %s, want two different ones in 127.52.0.0/16", first.Addr(), second.Addr())
	}
}
