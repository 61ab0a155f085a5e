package bootstrap

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"

	"k8s.io/apimachinery/pkg/util/validation"
)

// NodeDriverSpec describes Rancher's NodeDriver object.
type NodeDriverSpec struct {
	Name             string
	URL              string
	UIURL            string
	Checksum         string // sha256 hex of the binary
	WhitelistDomains []string
}

// NodeDriver mirrors management.cattle.io/v3 NodeDriver.
type NodeDriver struct {
	APIVersion string             `yaml:"apiVersion"`
	Kind       string             `yaml:"kind"`
	Metadata   nodeDriverMetadata `yaml:"metadata"`
	Spec       nodeDriverBody     `yaml:"spec"`
}

type nodeDriverMetadata struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels,omitempty"`
}

type nodeDriverBody struct {
	Active           bool     `yaml:"active"`
	Builtin          bool     `yaml:"builtin"`
	DisplayName      string   `yaml:"displayName"`
	URL              string   `yaml:"url"`
	Checksum         string   `yaml:"checksum"`
	UIURL            string   `yaml:"uiUrl,omitempty"`
	WhitelistDomains []string `yaml:"whitelistDomains,omitempty"`
}

// SHA256 hashes a reader.
func SHA256(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", fmt.Errorf("hash binary: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Validate reports every problem at once.
func (s NodeDriverSpec) Validate() error {
	var errs []error
	if msgs := validation.IsDNS1123Subdomain(s.Name); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("%s %q: must be a DNS-1123 subdomain", FlagDriverName, s.Name))
	}
	for flag, v := range map[string]string{FlagURL: s.URL, FlagUIURL: s.UIURL} {
		if v == "" && flag == FlagUIURL {
			continue
		}
		if u, err := url.Parse(v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s %q: must be an http(s) URL Rancher can download from", flag, v))
		}
	}
	if b, err := hex.DecodeString(s.Checksum); err != nil || len(b) != sha256.Size {
		errs = append(errs, fmt.Errorf("checksum %q: must be 64 hex digits (sha256)", s.Checksum))
	}
	return errors.Join(errs...)
}

// BuildNodeDriver renders the NodeDriver YAML; the download host (and the
// UI host) are whitelisted besides any extra domains.
func BuildNodeDriver(s NodeDriverSpec) ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("build node driver: %w", err)
	}
	domains := append([]string(nil), s.WhitelistDomains...)
	for _, raw := range []string{s.URL, s.UIURL} {
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" && !contains(domains, u.Hostname()) {
			domains = append(domains, u.Hostname())
		}
	}
	return marshalYAML(NodeDriver{
		APIVersion: "management.cattle.io/v3",
		Kind:       "NodeDriver",
		Metadata:   nodeDriverMetadata{Name: s.Name, Labels: map[string]string{LabelManagedBy: ManagedBy}},
		Spec: nodeDriverBody{
			Active: true, DisplayName: s.Name, URL: s.URL, Checksum: s.Checksum,
			UIURL: s.UIURL, WhitelistDomains: domains,
		},
	})
}
