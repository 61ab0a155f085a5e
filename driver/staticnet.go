package driver

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harvester-kit/harvester-machine/internal/staticip"
	"github.com/harvester-kit/harvester-machine/internal/yamlutil"
)

// StaticAddressing is --harvester-static-address-range and its companion
// flags, parsed: the NIC of index NIC gets one address of Range.
type StaticAddressing struct {
	Range   staticip.Range
	Gateway netip.Addr // invalid: none
	DNS     []netip.Addr
	NIC     int // index into the machine's interfaces
}

// noNIC is StaticAddressing.NIC when --harvester-static-interface is not
// an interface name (the problem is reported; nothing indexes by it).
const noNIC = -1

// NICName is the VM interface name of the static NIC.
func (s StaticAddressing) NICName() string { return nicName(s.NIC) }

func nicName(i int) string { return "nic-" + strconv.Itoa(i) }

// parseStatic parses the static-address flags of c (nil, nil when no range
// is given). Every problem is returned, each naming its flag.
func parseStatic(c Config) (*StaticAddressing, error) {
	var errs []error
	flagErr := func(flag string, err error) { errs = append(errs, flagError(flag, err)) }
	if c.StaticAddressRange == "" {
		for _, f := range []struct {
			flag string
			set  bool
		}{{FlagStaticGateway, c.StaticGateway != ""}, {FlagStaticDNS, len(c.StaticDNS) > 0}, {FlagStaticInterface, c.StaticInterface != ""}} {
			if f.set {
				flagErr(f.flag, fmt.Errorf("needs --%s", FlagStaticAddressRange))
			}
		}
		return nil, errors.Join(errs...)
	}
	s := &StaticAddressing{}
	r, err := staticip.ParseRange(c.StaticAddressRange)
	if err != nil {
		flagErr(FlagStaticAddressRange, err)
	}
	s.Range = r
	if c.StaticGateway != "" {
		if s.Gateway, err = staticip.ParseGateway(c.StaticGateway, r); err != nil {
			flagErr(FlagStaticGateway, err)
		}
	}
	if s.DNS, err = staticip.ParseDNS(c.StaticDNS); err != nil {
		flagErr(FlagStaticDNS, err)
	}
	if c.StaticInterface != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c.StaticInterface, "nic-"))
		if err != nil || n < 0 || !strings.HasPrefix(c.StaticInterface, "nic-") || nicName(n) != c.StaticInterface {
			flagErr(FlagStaticInterface, fmt.Errorf("%q is not an interface name; write nic-<i> for the i-th interface (nic-0 is the first)", c.StaticInterface))
			n = noNIC
		}
		s.NIC = n
	}
	return s, errors.Join(errs...)
}

// validateStatic checks the static NIC against the machine's interfaces
// and the user's network data (which must be version 2 to be merged).
func validateStatic(c Config, s *StaticAddressing, nics []NetworkInterface) []error {
	if s == nil {
		return nil
	}
	var errs []error
	switch {
	case s.NIC == noNIC:
		// The interface name is refused already (parseStatic).
	case len(nics) > 0 && s.NIC >= len(nics):
		errs = append(errs, flagProblem(FlagStaticInterface, "%s does not exist: the machine has %d interface(s), nic-0 to %s", s.NICName(), len(nics), nicName(len(nics)-1)))
	case len(nics) > 0 && nics[s.NIC].Type == InterfaceTypeMasquerade:
		errs = append(errs, flagProblem(FlagStaticInterface, "%s uses masquerade binding (the pod network's address); a static address needs a bridge interface", s.NICName()))
	}
	if c.NetworkData != "" {
		if _, err := MergeStaticNetworkData(c.NetworkData, StaticNIC{ID: s.NICName(), MAC: "02:00:00:00:00:00", Address: netip.PrefixFrom(s.Range.First, s.Range.Prefix.Bits())}); err != nil {
			errs = append(errs, flagError(FlagNetworkData, err))
		}
	}
	return errs
}

// StaticNIC is one machine's static NIC, resolved: what its network data
// says.
type StaticNIC struct {
	ID      string // the device ID in the network data (the VM interface name)
	MAC     string
	Address netip.Prefix
	Gateway netip.Addr // invalid: none
	DNS     []netip.Addr
}

// netplanEthernet is the part of a netplan v2 ethernet device the driver writes.
type netplanEthernet struct {
	Match       netplanMatch        `yaml:"match"`
	DHCP4       bool                `yaml:"dhcp4"`
	DHCP6       bool                `yaml:"dhcp6"`
	Addresses   []string            `yaml:"addresses"`
	Routes      []netplanRoute      `yaml:"routes,omitempty"`
	Nameservers *netplanNameservers `yaml:"nameservers,omitempty"`
}

type netplanMatch struct {
	MACAddress quoted `yaml:"macaddress"`
}

// quoted is a string written in double quotes: cloud-init reads YAML 1.1,
// where an unquoted MAC of digits only (52:54:00:12:34:56) is a base-60
// number.
type quoted string

func (q quoted) MarshalYAML() (any, error) {
	return &yaml.Node{Kind: yaml.ScalarNode, Style: yaml.DoubleQuotedStyle, Value: string(q)}, nil
}

type netplanRoute struct {
	To  string `yaml:"to"`
	Via string `yaml:"via"`
}

type netplanNameservers struct {
	Addresses []string `yaml:"addresses"`
}

func (n StaticNIC) device() netplanEthernet {
	d := netplanEthernet{Match: netplanMatch{MACAddress: quoted(n.MAC)}, Addresses: []string{n.Address.String()}}
	if n.Gateway.IsValid() {
		d.Routes = []netplanRoute{{To: "default", Via: n.Gateway.String()}}
	}
	if len(n.DNS) > 0 {
		d.Nameservers = &netplanNameservers{}
		for _, a := range n.DNS {
			d.Nameservers.Addresses = append(d.Nameservers.Addresses, a.String())
		}
	}
	return d
}

// MergeStaticNetworkData renders a machine's network data: the user's
// --harvester-network-data (netplan version 2, possibly under a "network"
// key; empty for none), kept as written, with the static NIC added to its
// ethernets, matched by MAC. The user's document may not use the static
// NIC's device ID, nor match its MAC. It is pure.
func MergeStaticNetworkData(user string, n StaticNIC) ([]byte, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	doc := root
	if strings.TrimSpace(user) != "" {
		var parsed yaml.Node
		if err := yaml.Unmarshal([]byte(user), &parsed); err != nil || len(parsed.Content) == 0 || parsed.Content[0].Kind != yaml.MappingNode {
			return nil, errors.New("must be cloud-init network config YAML")
		}
		doc, root = parsed.Content[0], parsed.Content[0]
		if inner := mappingValue(root, "network"); inner != nil && inner.Kind == yaml.MappingNode {
			root = inner
		}
		if v := mappingValue(root, "version"); v == nil || v.Value != "2" {
			got := "none"
			if v != nil {
				got = v.Value
			}
			return nil, fmt.Errorf("must be network config version 2 (netplan) to be combined with --%s, got version %s", FlagStaticAddressRange, got)
		}
	} else {
		setMapping(root, "version", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "2"})
	}
	eth := mappingValue(root, "ethernets")
	switch {
	case eth == nil || isNull(eth):
		eth = &yaml.Node{Kind: yaml.MappingNode}
		setMapping(root, "ethernets", eth)
	case eth.Kind != yaml.MappingNode:
		return nil, errors.New("ethernets must be a mapping of device IDs to their settings")
	}
	if mappingValue(eth, n.ID) != nil {
		return nil, fmt.Errorf("ethernets.%s is the device the static address is written to; give your device another ID", n.ID)
	}
	for i := 0; i+1 < len(eth.Content); i += 2 {
		if mac := mappingValue(mappingValue(eth.Content[i+1], "match"), "macaddress"); mac != nil && strings.EqualFold(mac.Value, n.MAC) {
			return nil, fmt.Errorf("ethernets.%s matches the static NIC's MAC %s; leave that NIC to --%s", eth.Content[i].Value, n.MAC, FlagStaticAddressRange)
		}
	}
	var dev yaml.Node
	if err := dev.Encode(n.device()); err != nil {
		return nil, fmt.Errorf("render network data: %w", err)
	}
	setMapping(eth, n.ID, &dev)
	out, err := yamlutil.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("render network data: %w", err)
	}
	return out, nil
}

// setMapping appends key: value to mapping m (the key must be new).
func setMapping(m *yaml.Node, key string, value *yaml.Node) {
	if i := mappingIndex(m, key); i >= 0 {
		m.Content[i+1] = value
		return
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, value)
}

func mappingIndex(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}
