// Stand-in for the guest's cloud-init, cloud-init 26.2: the static addresses
// a guest's network data gives it. It follows
// https://github.com/canonical/cloud-init/blob/26.2/cloudinit/net/netplan.py.

package controllers

import (
	"encoding/base64"
	"net/netip"
	"strings"

	"gopkg.in/yaml.v3"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// secretNetworkDataKey is the cloud-init Secret's key of network data.
const secretNetworkDataKey = "networkdata"

// netplanDoc is the part of a netplan v2 (cloud-init network config
// version 2) document a simulated guest applies: ethernets matched by MAC
// with static addresses.
type netplanDoc struct {
	Network   *netplanDoc               `yaml:"network"`
	Version   any                       `yaml:"version"`
	Ethernets map[string]netplanEtherV2 `yaml:"ethernets"`
}

type netplanEtherV2 struct {
	Match struct {
		MACAddress string `yaml:"macaddress"`
	} `yaml:"match"`
	Addresses []any `yaml:"addresses"`
}

// staticAddresses reads the static IPv4 address a guest configures for
// each MAC from its network data: the first address of every ethernet
// that matches by MAC. Anything else (version 1, names without a MAC
// match, DHCP) leaves the interface to the simulated DHCP.
func staticAddresses(networkData []byte) map[string]string {
	var doc netplanDoc
	if len(networkData) == 0 || yaml.Unmarshal(networkData, &doc) != nil {
		return nil
	}
	if doc.Network != nil {
		doc = *doc.Network
	}
	out := map[string]string{}
	for _, e := range doc.Ethernets {
		mac := strings.ToLower(e.Match.MACAddress)
		if mac == "" {
			continue
		}
		for _, a := range e.Addresses {
			s, _ := a.(string)
			if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
				out[mac] = p.Addr().String()
				break
			}
		}
	}
	return out
}

// guestConfigured is what the guest's NICs end up with: the addresses its
// network data sets for their MACs; on a network managed DHCP serves, the
// lease of the NIC's MAC ("" without one); elsewhere the simulated DHCP
// address.
func (s *sim) guestConfigured(c *vmiContext, ips []string) []string {
	static := staticAddresses(s.networkDataOf(c.u.GetNamespace(), &c.vmi.Spec))
	out := append([]string(nil), ips...)
	for i, a := range s.managedAddresses(c) {
		if i < len(out) {
			out[i] = a
		}
	}
	return applyStatic(&c.vmi.Spec, c.key, out, static)
}

// applyStatic replaces the address of every interface whose MAC the
// guest's network data configures statically.
func applyStatic(spec *kubevirtv1.VirtualMachineInstanceSpec, key string, ips []string, static map[string]string) []string {
	if len(static) == 0 {
		return ips
	}
	out := append([]string(nil), ips...)
	for i, name := range vmiInterfaceNames(spec) {
		if a, ok := static[strings.ToLower(macFor(spec, key, name))]; ok && i < len(out) {
			out[i] = a
		}
	}
	return out
}

// networkDataOf is the VMI's cloud-init network data (NoCloud or config
// drive: inline, base64 or from its Secret), nil when it has none.
func (s *sim) networkDataOf(ns string, spec *kubevirtv1.VirtualMachineInstanceSpec) []byte {
	for _, v := range spec.Volumes {
		var inline, b64 string
		switch {
		case v.CloudInitNoCloud != nil:
			nc := v.CloudInitNoCloud
			inline, b64 = nc.NetworkData, nc.NetworkDataBase64
			if nc.NetworkDataSecretRef != nil {
				return s.secretNetworkData(ns, nc.NetworkDataSecretRef.Name)
			}
		case v.CloudInitConfigDrive != nil:
			cd := v.CloudInitConfigDrive
			inline, b64 = cd.NetworkData, cd.NetworkDataBase64
			if cd.NetworkDataSecretRef != nil {
				return s.secretNetworkData(ns, cd.NetworkDataSecretRef.Name)
			}
		default:
			continue
		}
		if inline != "" {
			return []byte(inline)
		}
		if data, err := base64.StdEncoding.DecodeString(b64); err == nil && len(data) > 0 {
			return data
		}
	}
	return nil
}

func (s *sim) secretNetworkData(ns, name string) []byte {
	sec, err := s.kubeInformers.Core().V1().Secrets().Lister().Secrets(ns).Get(name)
	if err != nil {
		return nil
	}
	return sec.Data[secretNetworkDataKey]
}
