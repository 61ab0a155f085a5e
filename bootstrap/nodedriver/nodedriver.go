// Package nodedriver builds the NodeDriver object that registers this
// driver on Rancher's Node Drivers page.
package nodedriver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/harvester-kit/harvester-machine/guest/addons"
	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/yamlutil"
)

// Input fields, as problems name them (a CLI renames them to its flags).
const (
	FieldName     = "driver name"
	FieldURL      = "url"
	FieldUIURL    = "ui url"
	FieldChecksum = "checksum of the binary"
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
		errs = append(errs, field.Invalid(FieldName, s.Name, "must be a DNS-1123 subdomain (lower-case letters, digits, '-', '.')"))
	}
	for _, f := range []struct{ name, v string }{{FieldURL, s.URL}, {FieldUIURL, s.UIURL}} {
		if f.v == "" && f.name == FieldUIURL {
			continue
		}
		if u, err := url.Parse(f.v); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			errs = append(errs, field.Invalid(f.name, f.v, "must be an http(s) URL Rancher can download from"))
		}
	}
	if b, err := hex.DecodeString(s.Checksum); err != nil || len(b) != sha256.Size {
		errs = append(errs, field.Invalid(FieldChecksum, s.Checksum, "must be 64 hex digits (sha256)"))
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
		if u, err := url.Parse(raw); err == nil && u.Hostname() != "" && !slices.Contains(domains, u.Hostname()) {
			domains = append(domains, u.Hostname())
		}
	}
	return yamlutil.Marshal(NodeDriver{
		APIVersion: "management.cattle.io/v3",
		Kind:       "NodeDriver",
		Metadata:   nodeDriverMetadata{Name: s.Name, Labels: map[string]string{addons.LabelManagedBy: addons.ManagedBy}},
		Spec: nodeDriverBody{
			Active: true, DisplayName: s.Name, URL: s.URL, Checksum: s.Checksum,
			UIURL: s.UIURL, WhitelistDomains: domains,
		},
	})
}
