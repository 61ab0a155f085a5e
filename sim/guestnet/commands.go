package guestnet

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Answers of the simulated guest's shell: the commands libmachine and
// Rancher send, nothing else.

// dockerCheck is the exact line libmachine's WaitForDocker sends.
const dockerCheck = "if ! type netstat 1>/dev/null; then ss -tln; else netstat -tln; fi"

// DockerPort is the port of the Docker engine libmachine looks for.
const DockerPort = 2376

// result is a command's output and exit status; exited when it was the
// shell's `exit`.
type result struct {
	stdout, stderr string
	code           int
	exited         bool
}

// session is what a command sees: the guest and the logged-in user.
type session struct {
	guest  *Guest
	user   string
	forced string              // the login key's forced command, run in place of any
	sleep  func(time.Duration) // nil: time.Sleep
}

// run answers one command line: a command the guest knows, or a list of
// them (shell.go).
func (s session) run(line string) result {
	if r, ok := s.command(line); ok {
		return r
	}
	var all result
	for _, p := range splitList(line) {
		if strings.TrimSpace(p) == "" {
			continue
		}
		r, ok := s.command(p)
		if !ok {
			r, ok = s.builtin(p)
		}
		if !ok {
			r = noSuchCommand(p)
		}
		all.stdout += r.stdout
		all.stderr += r.stderr
		all.code = r.code
		if r.exited {
			break
		}
	}
	return all
}

func noSuchCommand(cmd string) result {
	cmd = strings.Join(strings.Fields(cmd), " ")
	return result{stderr: fmt.Sprintf("sh: %s: the simulated guest has no such command (harvester-sim answers only the commands libmachine and Rancher send)\n", cmd), code: 127}
}

// command answers one of the command lines libmachine and Rancher send;
// false for others.
func (s session) command(line string) (result, bool) {
	cmd := strings.Join(strings.Fields(line), " ")
	switch cmd {
	case "cat /etc/os-release":
		return result{stdout: s.guest.OS.Release()}, true
	case "hostname":
		return result{stdout: s.guest.Hostname + "\n"}, true
	case "uname", "uname -s":
		return result{stdout: "Linux\n"}, true
	case "uname -r":
		return result{stdout: kernel + "\n"}, true
	case "uname -m":
		return result{stdout: "x86_64\n"}, true
	case "uname -a":
		return result{stdout: fmt.Sprintf("Linux %s %s #1 SMP x86_64 x86_64 x86_64 GNU/Linux\n", s.guest.Hostname, kernel)}, true
	case "whoami", "id -un":
		return result{stdout: s.user + "\n"}, true
	case "sudo -n true":
		if l := s.guest.Access.Logins[s.user]; l != nil && l.Sudo {
			return result{}, true
		}
		return result{stderr: "sudo: a password is required\n", code: 1}, true
	case "ss -tln":
		return result{stdout: s.ss()}, true
	case "netstat -tln", dockerCheck:
		return result{stdout: s.netstat()}, true
	}
	if rest, ok := strings.CutPrefix(cmd, "exit"); ok {
		if rest == "" {
			return result{exited: true}, true
		}
		if n, err := strconv.Atoi(strings.TrimSpace(rest)); err == nil {
			return result{code: n & 0xff, exited: true}, true
		}
	}
	return result{}, false
}

// builtin answers echo and sleep, whose arguments are words.
func (s session) builtin(line string) (result, bool) {
	w, err := words(line)
	if err != nil {
		return result{stderr: "sh: 1: " + err.Error() + "\n", code: 2, exited: true}, true
	}
	switch {
	case len(w) > 0 && w[0] == "echo":
		return result{stdout: strings.Join(w[1:], " ") + "\n"}, true
	case len(w) == 2 && w[0] == "sleep":
		sec, err := strconv.ParseFloat(w[1], 64)
		if err != nil || sec < 0 {
			return result{stderr: fmt.Sprintf("sleep: invalid time interval '%s'\n", w[1]), code: 1}, true
		}
		sleep := s.sleep
		if sleep == nil {
			sleep = time.Sleep
		}
		sleep(time.Duration(sec * float64(time.Second)))
		return result{}, true
	}
	return result{}, false
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
