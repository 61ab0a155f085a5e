package kubevip

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"time"

	"golang.org/x/sys/unix"
)

// listenARP opens a packet socket receiving the ARP frames that arrive on
// interface name (the node's veth, seen from the guest network).
func listenARP(name string) (int, error) {
	ifi, err := net.InterfaceByName(name)
	if err != nil {
		return -1, fmt.Errorf("watch ARP on %s: %w", name, err)
	}
	proto := htons(unix.ETH_P_ARP)
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(proto))
	if err != nil {
		return -1, fmt.Errorf("watch ARP on %s: %w", name, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: proto, Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("watch ARP on %s: %w", name, err)
	}
	tv := unix.NsecToTimeval((500 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// GratuitousARP parses an Ethernet frame and returns the address it
// announces when it is a gratuitous ARP (sender and target address equal),
// with the announcing hardware address.
func GratuitousARP(frame []byte) (netip.Addr, net.HardwareAddr, bool) {
	// Ethernet header (14 bytes), then ARP for Ethernet/IPv4 (28 bytes).
	if len(frame) < 42 || binary.BigEndian.Uint16(frame[12:]) != unix.ETH_P_ARP {
		return netip.Addr{}, nil, false
	}
	arp := frame[14:]
	if binary.BigEndian.Uint16(arp[0:]) != 1 || binary.BigEndian.Uint16(arp[2:]) != unix.ETH_P_IP || arp[4] != 6 || arp[5] != 4 {
		return netip.Addr{}, nil, false
	}
	sender, _ := netip.AddrFromSlice(arp[14:18])
	target, _ := netip.AddrFromSlice(arp[24:28])
	if sender != target || !sender.IsValid() {
		return netip.Addr{}, nil, false
	}
	return sender, net.HardwareAddr(append([]byte(nil), arp[8:14]...)), true
}

// watchARP counts the gratuitous ARPs kube-vip sends from the node, by
// address, and logs the first of each.
func (p *nodeProc) watchARP(ctx context.Context, fd int) {
	defer unix.Close(fd)
	buf := make([]byte, 1514)
	for ctx.Err() == nil {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if err != unix.EAGAIN && err != unix.EINTR {
				time.Sleep(100 * time.Millisecond)
			}
			continue // look at ctx again
		}
		addr, mac, ok := GratuitousARP(buf[:n])
		if !ok {
			continue
		}
		first := false
		p.update(func(st *State) {
			first = st.GratuitousARPs[addr.String()] == 0
			st.GratuitousARPs[addr.String()]++
		})
		if first {
			p.spec.log.Info("gratuitous ARP from kube-vip", "cluster", p.spec.cluster, "node", p.spec.node, "address", addr, "mac", mac.String())
		}
	}
}
