package guestnet

import (
	"fmt"
	"strconv"
	"strings"
)

// Answers of the simulated guest's shell: the commands libmachine and
// Rancher send, nothing else.

// dockerCheck is the exact line libmachine's WaitForDocker sends.
const dockerCheck = "if ! type netstat 1>/dev/null; then ss -tln; else netstat -tln; fi"

// DockerPort is the port of the Docker engine libmachine looks for.
const DockerPort = 2376

// result is a command's output and exit status.
type result struct {
	stdout, stderr string
	code           int
}

// session is what a command sees: the guest and the logged-in user.
type session struct {
	guest *Guest
	user  string
}

// run answers one command line.
func (s session) run(line string) result {
	cmd := strings.Join(strings.Fields(line), " ")
	switch cmd {
	case "cat /etc/os-release":
		return result{stdout: s.guest.OS.Release()}
	case "hostname":
		return result{stdout: s.guest.Hostname + "\n"}
	case "uname", "uname -s":
		return result{stdout: "Linux\n"}
	case "uname -r":
		return result{stdout: kernel + "\n"}
	case "uname -m":
		return result{stdout: "x86_64\n"}
	case "uname -a":
		return result{stdout: fmt.Sprintf("Linux %s %s #1 SMP x86_64 x86_64 x86_64 GNU/Linux\n", s.guest.Hostname, kernel)}
	case "sudo -n true":
		if l := s.guest.Access.Logins[s.user]; l != nil && l.Sudo {
			return result{}
		}
		return result{stderr: "sudo: a password is required\n", code: 1}
	case "ss -tln":
		return result{stdout: s.ss()}
	case "netstat -tln", dockerCheck:
		return result{stdout: s.netstat()}
	}
	if rest, ok := strings.CutPrefix(cmd, "exit"); ok {
		if rest == "" {
			return result{}
		}
		if n, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
			return result{code: n & 0xff}
		}
	}
	return result{stderr: fmt.Sprintf("sh: %s: the simulated guest has no such command (harvester-sim answers only the commands libmachine and Rancher send)\n", cmd), code: 127}
}

const kernel = "5.15.0-105-generic"

// ports are the TCP ports listening in the guest.
func (s session) ports() []int {
	if s.guest.Docker {
		return []int{22, DockerPort}
	}
	return []int{22}
}

func (s session) ss() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-6s %-6s %-6s %20s %18s%s\n", "State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port", "Process")
	for _, p := range s.ports() {
		fmt.Fprintf(&b, "%-6s %-6s %-6s %20s %18s\n", "LISTEN", "0", "4096", "0.0.0.0:"+strconv.Itoa(p), "0.0.0.0:*")
	}
	return b.String()
}

func (s session) netstat() string {
	var b strings.Builder
	b.WriteString("Active Internet connections (only servers)\n")
	fmt.Fprintf(&b, "%-5s %6s %6s %-23s %-23s %s\n", "Proto", "Recv-Q", "Send-Q", "Local Address", "Foreign Address", "State")
	for _, p := range s.ports() {
		fmt.Fprintf(&b, "%-5s %6s %6s %-23s %-23s %s\n", "tcp", "0", "0", "0.0.0.0:"+strconv.Itoa(p), "0.0.0.0:*", "LISTEN")
	}
	return b.String()
}
