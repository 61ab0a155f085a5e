package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Addresses the guard dials: documentation ranges (TEST-NET-1 and
// 2001:db8::/32) outside the simulator's guest networks; in the namespace
// no route reaches them.
var guardTargets = []string{"192.0.2.1:9", "[2001:db8:ffff::1]:9"}

// Guard checks that this process's network namespace is private: no
// default route, and a TCP connect to an address outside loopback and the
// guest network fails at once with ENETUNREACH.
func Guard() error {
	if err := noDefaultRoute(); err != nil {
		return err
	}
	for _, target := range guardTargets {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		start := time.Now()
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", target)
		cancel()
		if err == nil {
			conn.Close()
			return fmt.Errorf("guard: connect to %s succeeded: the namespace reaches the network", target)
		}
		if !errors.Is(err, syscall.ENETUNREACH) {
			return fmt.Errorf("guard: connect to %s failed with %w after %s, want ENETUNREACH at once", target, err, time.Since(start).Round(time.Millisecond))
		}
	}
	return nil
}

// noDefaultRoute reads the kernel's IPv4 and IPv6 routing tables; an
// IPv6 "unreachable" default (RTF_REJECT) on lo does not count.
func noDefaultRoute() error {
	if err := scanRoutes("/proc/net/route", func(f []string) bool {
		return len(f) > 7 && f[1] == "00000000" && f[7] == "00000000"
	}); err != nil {
		return err
	}
	return scanRoutes("/proc/net/ipv6_route", func(f []string) bool {
		if len(f) < 10 || f[0] != strings.Repeat("0", 32) || f[1] != "00" {
			return false
		}
		flags, err := strconv.ParseUint(f[8], 16, 32)
		return err != nil || flags&0x0200 == 0 // RTF_REJECT
	})
}

func scanRoutes(path string, isDefault func([]string) bool) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil // no IPv6 in this kernel
	}
	if err != nil {
		return fmt.Errorf("guard: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); isDefault(fields) {
			return fmt.Errorf("guard: %s has a default route (%s): the namespace is not private", path, sc.Text())
		}
	}
	return sc.Err()
}
