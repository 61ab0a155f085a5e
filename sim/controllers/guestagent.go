// Stand-in for the guest's cloud-init, cloud-init 26.2: whether the guest's
// user data installs qemu-guest-agent. It follows
// https://github.com/canonical/cloud-init/blob/26.2/cloudinit/config/cc_package_update_upgrade_install.py.

package controllers

import (
	"bufio"
	"fmt"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/harvester-kit/harvester-machine/sim/userdata"
)

// guestAgentPackage is the package whose installation makes the simulated
// guest report its addresses.
const guestAgentPackage = "qemu-guest-agent"

// shellInstallsAgent matches a package-manager install command naming the
// guest agent package on one (continuation-joined) shell line.
var shellInstallsAgent = regexp.MustCompile(
	`(^|[\s;&|(])(apt-get|apt|yum|dnf|zypper)(\s+[^\s;&|]+)*?\s+(install|in)(\s+[^\s;&|]+)*?\s+qemu-guest-agent([\s;&|)=]|$)`)

// userDataInstallsAgent reports whether cloud-init user data installs the
// qemu-guest-agent package: a #cloud-config whose packages list names it,
// a shell script (or runcmd/bootcmd line) that installs it with apt, yum,
// dnf or zypper, or a multipart MIME / gzip document containing such a part.
func userDataInstallsAgent(data []byte) (bool, error) {
	found := false
	err := userdata.Walk(data, func(kind userdata.Kind, body []byte) (bool, error) {
		var err error
		switch kind {
		case userdata.CloudConfig:
			found, err = cloudConfigInstallsAgent(body)
		case userdata.Script:
			found = shellInstallsAgentText(string(body))
		}
		return found || err != nil, err
	})
	return found, err
}

// shellInstallsAgentText checks a shell script line by line, joining
// backslash continuations.
func shellInstallsAgentText(script string) bool {
	joined := strings.ReplaceAll(script, "\\\n", " ")
	sc := bufio.NewScanner(strings.NewReader(joined))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if shellInstallsAgent.MatchString(line) {
			return true
		}
	}
	return false
}

// cloudConfigInstallsAgent inspects the packages list and the runcmd and
// bootcmd commands of a #cloud-config document.
func cloudConfigInstallsAgent(doc []byte) (bool, error) {
	var cfg struct {
		Packages any   `yaml:"packages"`
		Runcmd   []any `yaml:"runcmd"`
		Bootcmd  []any `yaml:"bootcmd"`
	}
	if err := yaml.Unmarshal(doc, &cfg); err != nil {
		return false, fmt.Errorf("parse #cloud-config: %w", err)
	}
	switch pkgs := cfg.Packages.(type) {
	case []any:
		for _, p := range pkgs {
			if packageEntryIsAgent(p) {
				return true, nil
			}
		}
	case map[string]any:
		if packageEntryIsAgent(pkgs) {
			return true, nil
		}
	}
	for _, cmd := range append(cfg.Bootcmd, cfg.Runcmd...) {
		if shellInstallsAgentText(commandLine(cmd)) {
			return true, nil
		}
	}
	return false, nil
}

// packageEntryIsAgent accepts "name", [name, version] and the
// {apt: [...], snap: [...]} form of newer cloud-init.
func packageEntryIsAgent(entry any) bool {
	switch v := entry.(type) {
	case string:
		return strings.TrimSpace(v) == guestAgentPackage
	case []any:
		if len(v) == 0 {
			return false
		}
		name, ok := v[0].(string)
		return ok && strings.TrimSpace(name) == guestAgentPackage
	case map[string]any:
		for _, list := range v {
			items, ok := list.([]any)
			if !ok {
				continue
			}
			for _, item := range items {
				if packageEntryIsAgent(item) {
					return true
				}
			}
		}
	}
	return false
}

// commandLine renders a runcmd entry (a string or an argv list) as one line.
func commandLine(cmd any) string {
	switch v := cmd.(type) {
	case string:
		return v
	case []any:
		parts := make([]string, 0, len(v))
		for _, a := range v {
			parts = append(parts, fmt.Sprint(a))
		}
		return strings.Join(parts, " ")
	}
	return ""
}

// LabelImageGuestAgent on a VirtualMachineImage says its OS ships and
// starts qemu-guest-agent, so VMs booted from it report addresses.
const LabelImageGuestAgent = "harvesterhci.io/os-qemu-guest-agent"

// guestSources is what the guest-agent decision looks at.
type guestSources struct {
	UserData [][]byte        // every cloud-init user data document of the VMI
	Images   map[string]bool // "ns/name" of images behind the VMI's disks -> labelled with the agent
	Problems []string        // sources that could not be read (missing Secret, bad base64)
	// ImageNames are "name displayName" of the images behind the disks, in
	// disk order (the first is the OS a login sees).
	ImageNames []string
}

// guestRunsAgent decides whether the simulated guest runs qemu-guest-agent
// and says why (or why not).
func guestRunsAgent(src guestSources) (bool, string) {
	for ref, labelled := range src.Images {
		if labelled {
			return true, fmt.Sprintf("image %s is labelled %s=true", ref, LabelImageGuestAgent)
		}
	}
	var problems []string
	problems = append(problems, src.Problems...)
	for _, ud := range src.UserData {
		ok, err := userDataInstallsAgent(ud)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if ok {
			return true, "cloud-init user data installs " + guestAgentPackage
		}
	}
	why := "no cloud-init user data installs " + guestAgentPackage + " and no disk image is labelled " + LabelImageGuestAgent + "=true"
	if len(problems) > 0 {
		why += " (" + strings.Join(problems, "; ") + ")"
	}
	return false, why
}
