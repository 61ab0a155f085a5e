package clusterstate

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"os"
	"strings"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/harvester-kit/harvester-machine/internal/kubeapi"
)

// Credential kinds (Auth.Kind).
const (
	CredToken       = "token"
	CredJWT         = "JWT"
	CredCertificate = "client certificate"
	CredOther       = "other"
)

// Authenticate asks the API server who cfg's credential is (a
// SelfSubjectReview) and records what kind of credential it is and when it
// expires. The credential itself is not kept.
func Authenticate(ctx context.Context, cfg *rest.Config, source string) Auth {
	a := Auth{Source: source}
	a.Kind, a.Expires = CredentialOf(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err == nil {
		var r *authnv1.SelfSubjectReview
		r, err = cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err == nil {
			a.User = r.Status.UserInfo.Username
			return a
		}
	}
	a.Rejected = kubeapi.IsUnauthorized(err)
	a.Err = "authenticate " + source + ": " + err.Error()
	return a
}

// CredentialOf says what kind of credential cfg carries and, for a JWT or
// a client certificate, when it expires.
func CredentialOf(cfg *rest.Config) (string, *time.Time) {
	token := cfg.BearerToken
	if token == "" && cfg.BearerTokenFile != "" {
		if b, err := os.ReadFile(cfg.BearerTokenFile); err == nil {
			token = strings.TrimSpace(string(b))
		}
	}
	if token != "" {
		if exp, ok := JWTExpiry(token); ok {
			return CredJWT, exp
		}
		return CredToken, nil
	}
	cert := cfg.CertData
	if len(cert) == 0 && cfg.CertFile != "" {
		cert, _ = os.ReadFile(cfg.CertFile)
	}
	if block, _ := pem.Decode(cert); block != nil {
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			t := c.NotAfter
			return CredCertificate, &t
		}
	}
	return CredOther, nil
}

// JWTExpiry reports whether token is a JWT and its exp claim (nil when the
// JWT does not expire, as legacy service-account tokens).
func JWTExpiry(token string) (*time.Time, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, false
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil, false
	}
	var claims struct {
		Exp *json.Number `json:"exp"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return nil, false
	}
	if claims.Exp == nil {
		return nil, true
	}
	secs, err := claims.Exp.Int64()
	if err != nil {
		return nil, true
	}
	t := time.Unix(secs, 0).UTC()
	return &t, true
}
