package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/harvester-kit/harvester-machine/internal/staticip"
)

// StaticAddressing is --harvester-static-address-range and its companion
// flags, parsed: the NIC of index NIC gets one address of Range.
type StaticAddressing struct {
	Range   staticip.Range
	Gateway netip.Addr // invalid: none
	DNS     []netip.Addr
	NIC     int // index into the machine's interfaces
}

// NoNIC is StaticAddressing.NIC when --harvester-static-interface is not
// an interface name (the problem is reported; nothing indexes by it).
const NoNIC = -1

// NICName is the VM interface name of the static NIC.
func (s StaticAddressing) NICName() string { return NICName(s.NIC) }

// NICName is the VM interface name of the i-th interface.
func NICName(i int) string { return "nic-" + strconv.Itoa(i) }

// ParseStatic parses the static-address flags of c (nil, nil when no range
// is given). Every problem is returned, each naming its flag.
func ParseStatic(c Config) (*StaticAddressing, error) {
	var errs []error
	flagErr := func(flag string, err error) { errs = append(errs, FlagError(flag, err)) }
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
		if s.Gateway, err = parseGateway(c.StaticGateway, r); err != nil {
			flagErr(FlagStaticGateway, err)
		}
	}
	if s.DNS, err = parseDNS(c.StaticDNS); err != nil {
		flagErr(FlagStaticDNS, err)
	}
	if c.StaticInterface != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(c.StaticInterface, "nic-"))
		if err != nil || n < 0 || !strings.HasPrefix(c.StaticInterface, "nic-") || NICName(n) != c.StaticInterface {
			flagErr(FlagStaticInterface, fmt.Errorf("%q is not an interface name; write nic-<i> for the i-th interface (nic-0 is the first)", c.StaticInterface))
			n = NoNIC
		}
		s.NIC = n
	}
	return s, errors.Join(errs...)
}

// validateStaticNIC checks the static NIC against the machine's
// interfaces.
func validateStaticNIC(s *StaticAddressing, nics []NetworkInterface) []error {
	if s == nil {
		return nil
	}
	switch {
	case s.NIC == NoNIC:
		// The interface name is refused already (ParseStatic).
	case len(nics) > 0 && s.NIC >= len(nics):
		return []error{FlagProblem(FlagStaticInterface, "%s does not exist: the machine has %d interface(s), nic-0 to %s", s.NICName(), len(nics), NICName(len(nics)-1))}
	case len(nics) > 0 && nics[s.NIC].Type == InterfaceTypeMasquerade:
		return []error{FlagProblem(FlagStaticInterface, "%s uses masquerade binding (the pod network's address); a static address needs a bridge interface", s.NICName())}
	}
	return nil
}
