package guestnet

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"

	"golang.org/x/sys/unix"
)

// Route netlink, the few requests the guest network needs: bring a link up,
// create a dummy link, add and delete an address. Each request opens its own
// socket and waits for the kernel's acknowledgement.

// LinkUp sets the IFF_UP flag of the interface name.
func LinkUp(name string) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("link %s up: %w", name, err)
	}
	msg := ifInfo(ifi.Index, unix.IFF_UP, unix.IFF_UP)
	if err := request(unix.RTM_NEWLINK, 0, msg); err != nil {
		return fmt.Errorf("link %s up: %w", name, err)
	}
	return nil
}

// AddDummy creates a dummy interface name and brings it up. It fails with
// an error wrapping ErrNoDummy when the kernel has no dummy link type.
func AddDummy(name string) error {
	msg := ifInfo(0, unix.IFF_UP, unix.IFF_UP)
	msg = appendAttr(msg, unix.IFLA_IFNAME, append([]byte(name), 0))
	msg = appendAttr(msg, unix.IFLA_LINKINFO, appendAttr(nil, unix.IFLA_INFO_KIND, []byte("dummy")))
	err := request(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL, msg)
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = fmt.Errorf("%w (%w)", ErrNoDummy, err)
	}
	if err != nil {
		return fmt.Errorf("add dummy link %s: %w", name, err)
	}
	return nil
}

// ErrNoDummy: the kernel cannot make dummy links (module not loaded).
var ErrNoDummy = errors.New("the kernel has no dummy link type")

// AddAddr puts addr (as a host address, /32 or /128) on interface name;
// an address already there is not an error.
func AddAddr(name string, addr netip.Addr) error {
	err := addrRequest(unix.RTM_NEWADDR, unix.NLM_F_CREATE|unix.NLM_F_REPLACE, name, addr)
	if err != nil {
		return fmt.Errorf("add address %s to %s: %w", addr, name, err)
	}
	return nil
}

// DelAddr removes addr from interface name; an address not there is not an
// error.
func DelAddr(name string, addr netip.Addr) error {
	err := addrRequest(unix.RTM_DELADDR, 0, name, addr)
	if errors.Is(err, unix.EADDRNOTAVAIL) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove address %s from %s: %w", addr, name, err)
	}
	return nil
}

func addrRequest(typ, flags uint16, name string, addr netip.Addr) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return err
	}
	family, bits := unix.AF_INET, 32
	if addr.Is6() {
		family, bits = unix.AF_INET6, 128
	}
	// struct ifaddrmsg: family, prefixlen, flags, scope (u8 each), index (u32).
	msg := make([]byte, unix.SizeofIfAddrmsg)
	msg[0], msg[1], msg[2], msg[3] = byte(family), byte(bits), unix.IFA_F_NODAD, unix.RT_SCOPE_UNIVERSE
	binary.NativeEndian.PutUint32(msg[4:], uint32(ifi.Index))
	msg = appendAttr(msg, unix.IFA_LOCAL, addr.AsSlice())
	msg = appendAttr(msg, unix.IFA_ADDRESS, addr.AsSlice())
	return request(typ, flags, msg)
}

// ifInfo is a struct ifinfomsg: family, pad (u8), type (u16), index (i32),
// flags, change (u32).
func ifInfo(index int, flags, change uint32) []byte {
	msg := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(msg[4:], uint32(index))
	binary.NativeEndian.PutUint32(msg[8:], flags)
	binary.NativeEndian.PutUint32(msg[12:], change)
	return msg
}

// appendAttr appends one rtattr (length, type, data padded to 4 bytes).
func appendAttr(b []byte, typ uint16, data []byte) []byte {
	hdr := make([]byte, unix.SizeofRtAttr)
	binary.NativeEndian.PutUint16(hdr[0:], uint16(unix.SizeofRtAttr+len(data)))
	binary.NativeEndian.PutUint16(hdr[2:], typ)
	b = append(append(b, hdr...), data...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// request sends one route netlink request and returns the kernel's answer
// as an error (nil for success).
func request(typ, flags uint16, body []byte) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink bind: %w", err)
	}
	msg := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(body))
	binary.NativeEndian.PutUint32(msg[0:], uint32(unix.NLMSG_HDRLEN+len(body)))
	binary.NativeEndian.PutUint16(msg[4:], typ)
	binary.NativeEndian.PutUint16(msg[6:], flags|unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[8:], 1) // sequence number
	msg = append(msg, body...)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	buf := make([]byte, 8192)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return fmt.Errorf("netlink receive: %w", err)
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return fmt.Errorf("netlink parse: %w", err)
		}
		for _, m := range msgs {
			if m.Header.Type != unix.NLMSG_ERROR {
				continue
			}
			if len(m.Data) < 4 {
				return errors.New("netlink: short error message")
			}
			if code := int32(binary.NativeEndian.Uint32(m.Data)); code != 0 {
				return syscall.Errno(-code)
			}
			return nil
		}
	}
}

// AddVeth creates a veth pair, name here (brought up) and its peer
// peerName in the network namespace open at peerNetns (down: bring it up
// there). Neither end can be up before the pair exists (ENOTCONN).
func AddVeth(name, peerName string, peerNetns int) error {
	peer := ifInfo(0, 0, 0)
	peer = appendAttr(peer, unix.IFLA_IFNAME, append([]byte(peerName), 0))
	peer = appendAttr(peer, unix.IFLA_NET_NS_FD, binary.NativeEndian.AppendUint32(nil, uint32(peerNetns)))
	const vethInfoPeer = 1 // VETH_INFO_PEER
	info := appendAttr(nil, unix.IFLA_INFO_KIND, []byte("veth"))
	info = appendAttr(info, unix.IFLA_INFO_DATA, appendAttr(nil, vethInfoPeer, peer))
	msg := ifInfo(0, 0, 0)
	msg = appendAttr(msg, unix.IFLA_IFNAME, append([]byte(name), 0))
	msg = appendAttr(msg, unix.IFLA_LINKINFO, info)
	if err := request(unix.RTM_NEWLINK, unix.NLM_F_CREATE|unix.NLM_F_EXCL, msg); err != nil {
		return fmt.Errorf("add veth %s (peer %s): %w", name, peerName, err)
	}
	return LinkUp(name)
}

// DelLink removes the interface name (and a veth's peer with it); a link
// not there is not an error.
func DelLink(name string) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return nil //nolint:nilerr // gone already
	}
	if err := request(unix.RTM_DELLINK, 0, ifInfo(ifi.Index, 0, 0)); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("remove link %s: %w", name, err)
	}
	return nil
}

// AddDefaultRoute makes interface name the IPv4 default route (on-link, no
// gateway).
func AddDefaultRoute(name string) error {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return fmt.Errorf("default route via %s: %w", name, err)
	}
	// struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type (u8 each), flags (u32).
	msg := make([]byte, unix.SizeofRtMsg)
	msg[0], msg[4], msg[5], msg[6], msg[7] = unix.AF_INET, unix.RT_TABLE_MAIN, unix.RTPROT_BOOT, unix.RT_SCOPE_LINK, unix.RTN_UNICAST
	msg = appendAttr(msg, unix.RTA_OIF, binary.NativeEndian.AppendUint32(nil, uint32(ifi.Index)))
	if err := request(unix.RTM_NEWROUTE, unix.NLM_F_CREATE|unix.NLM_F_EXCL, msg); err != nil {
		return fmt.Errorf("default route via %s: %w", name, err)
	}
	return nil
}
