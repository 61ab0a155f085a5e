package controllers

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// guestAgentPackage is the package whose installation makes the simulated
// guest report its addresses.
const guestAgentPackage = "qemu-guest-agent"

// maxUserDataDepth bounds nesting of multipart and gzip layers.
const maxUserDataDepth = 4

// shellInstallsAgent matches a package-manager install command naming the
// guest agent package on one (continuation-joined) shell line.
var shellInstallsAgent = regexp.MustCompile(
	`(^|[\s;&|(])(apt-get|apt|yum|dnf|zypper)(\s+[^\s;&|]+)*?\s+(install|in)(\s+[^\s;&|]+)*?\s+qemu-guest-agent([\s;&|)=]|$)`)

// userDataInstallsAgent reports whether cloud-init user data installs the
// qemu-guest-agent package: a #cloud-config whose packages list names it,
// a shell script (or runcmd/bootcmd line) that installs it with apt, yum,
// dnf or zypper, or a multipart MIME / gzip document containing such a part.
func userDataInstallsAgent(data []byte) (bool, error) {
	return inspectUserData(data, 0)
}

func inspectUserData(data []byte, depth int) (bool, error) {
	if depth > maxUserDataDepth {
		return false, fmt.Errorf("user data nested deeper than %d levels", maxUserDataDepth)
	}
	if bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return false, fmt.Errorf("gunzip user data: %w", err)
		}
		plain, err := io.ReadAll(io.LimitReader(zr, 16<<20))
		if err != nil {
			return false, fmt.Errorf("gunzip user data: %w", err)
		}
		return inspectUserData(plain, depth+1)
	}
	text := strings.TrimLeft(string(data), " \t\r\n")
	if strings.HasPrefix(text, "## template: jinja") {
		_, rest, _ := strings.Cut(text, "\n")
		return inspectUserData([]byte(rest), depth+1)
	}
	switch {
	case strings.HasPrefix(text, "#cloud-config"):
		return cloudConfigInstallsAgent([]byte(text))
	case strings.HasPrefix(text, "#!"):
		return shellInstallsAgentText(text), nil
	case looksLikeMIME(text):
		return multipartInstallsAgent([]byte(text), depth)
	}
	return false, nil
}

func looksLikeMIME(text string) bool {
	head := strings.ToLower(text[:min(len(text), 200)])
	return strings.HasPrefix(head, "content-type:") || strings.HasPrefix(head, "mime-version:")
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

// multipartInstallsAgent walks the parts of a MIME multipart user data
// document; any part (cloud-config, shell script, nested multipart) that
// installs the agent counts.
func multipartInstallsAgent(data []byte, depth int) (bool, error) {
	if depth > maxUserDataDepth {
		return false, fmt.Errorf("user data nested deeper than %d levels", maxUserDataDepth)
	}
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		return false, fmt.Errorf("parse MIME user data: %w", err)
	}
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return false, fmt.Errorf("parse MIME user data content type: %w", err)
	}
	if !strings.HasPrefix(mediaType, "multipart/") {
		body, err := readPartBody(msg.Body, msg.Header.Get("Content-Transfer-Encoding"))
		if err != nil {
			return false, err
		}
		return inspectPart(msg.Header.Get("Content-Type"), body, depth)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextRawPart()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read MIME part: %w", err)
		}
		body, err := readPartBody(part, part.Header.Get("Content-Transfer-Encoding"))
		if err != nil {
			return false, err
		}
		ok, err := inspectPart(part.Header.Get("Content-Type"), body, depth)
		if err != nil || ok {
			return ok, err
		}
	}
}

func readPartBody(r io.Reader, encoding string) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("read MIME part: %w", err)
	}
	if strings.EqualFold(strings.TrimSpace(encoding), "base64") {
		clean := strings.Join(strings.Fields(string(body)), "")
		dec, err := base64.StdEncoding.DecodeString(clean)
		if err != nil {
			return nil, fmt.Errorf("decode base64 MIME part: %w", err)
		}
		return dec, nil
	}
	return body, nil
}

// inspectPart checks one MIME part given its Content-Type header value.
func inspectPart(contentType string, body []byte, depth int) (bool, error) {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	if strings.HasPrefix(mediaType, "multipart/") {
		doc := append([]byte("Content-Type: "+contentType+"\r\n\r\n"), body...)
		return multipartInstallsAgent(doc, depth+1)
	}
	switch mediaType {
	case "text/cloud-config":
		return cloudConfigInstallsAgent(body)
	case "text/cloud-config-jsonp", "text/x-include-url", "text/part-handler":
		return false, nil
	case "text/x-shellscript", "text/x-shellscript-per-boot", "text/x-shellscript-per-instance",
		"text/x-shellscript-per-once", "text/cloud-boothook":
		return shellInstallsAgentText(string(body)), nil
	case "application/x-gzip", "application/gzip":
		return inspectUserData(body, depth+1)
	}
	// Untyped parts and nested multipart documents are sniffed by content.
	return inspectUserData(body, depth+1)
}

// LabelImageGuestAgent on a VirtualMachineImage says its OS ships and
// starts qemu-guest-agent, so VMs booted from it report addresses.
const LabelImageGuestAgent = "harvesterhci.io/os-qemu-guest-agent"

// guestSources is what the guest-agent decision looks at.
type guestSources struct {
	UserData [][]byte        // every cloud-init user data document of the VMI
	Images   map[string]bool // "ns/name" of images behind the VMI's disks -> labelled with the agent
	Problems []string        // sources that could not be read (missing Secret, bad base64)
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
