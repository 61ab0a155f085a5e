package controllers

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"strings"
	"testing"
)

func multipartDoc(parts ...[2]string) string {
	var b strings.Builder
	b.WriteString("Content-Type: multipart/mixed; boundary=\"XYZ\"\nMIME-Version: 1.0\n\n")
	for _, p := range parts {
		b.WriteString("--XYZ\nContent-Type: " + p[0] + "\n")
		if strings.HasPrefix(p[1], "b64:") {
			b.WriteString("Content-Transfer-Encoding: base64\n\n")
			b.WriteString(base64.StdEncoding.EncodeToString([]byte(strings.TrimPrefix(p[1], "b64:"))) + "\n")
			continue
		}
		b.WriteString("\n" + p[1] + "\n")
	}
	b.WriteString("--XYZ--\n")
	return b.String()
}

func gzipped(s string) string {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return buf.String()
}

func TestUserDataInstallsAgent(t *testing.T) {
	tests := []struct {
		name    string
		data    string
		want    bool
		wantErr bool
	}{
		{"empty", "", false, false},
		{"cloud-config with agent", "#cloud-config\npackages:\n  - curl\n  - qemu-guest-agent\n", true, false},
		{"cloud-config name+version", "#cloud-config\npackages:\n  - [qemu-guest-agent, 1:6.2]\n", true, false},
		{"cloud-config apt map form", "#cloud-config\npackages:\n  apt: [qemu-guest-agent]\n", true, false},
		{"cloud-config other package", "#cloud-config\npackages: [qemu-guest-agent-extra, curl]\n", false, false},
		{"cloud-config without packages", "#cloud-config\nruncmd:\n  - systemctl enable --now qemu-guest-agent\n", false, false},
		{"cloud-config runcmd installs", "#cloud-config\nruncmd:\n  - [sh, -c, 'apt-get install -y qemu-guest-agent']\n", true, false},
		{"cloud-config mentions in comment", "#cloud-config\n# packages: [qemu-guest-agent]\nhostname: a\n", false, false},
		{"bad cloud-config", "#cloud-config\npackages: [unclosed\n", false, true},
		{"shell apt-get", "#!/bin/sh\napt-get update && apt-get install -y qemu-guest-agent\n", true, false},
		{"shell yum continuation", "#!/bin/bash\nyum -y \\\n  install qemu-guest-agent\n", true, false},
		{"shell zypper in", "#!/bin/sh\nzypper --non-interactive in qemu-guest-agent\n", true, false},
		{"shell dnf pinned", "#!/bin/sh\ndnf install -y qemu-guest-agent-7.0\n", false, false},
		{"shell only enables", "#!/bin/sh\nsystemctl start qemu-guest-agent\n", false, false},
		{"shell echo not install", "#!/bin/sh\napt-get update; echo qemu-guest-agent\n", false, false},
		{"shell commented", "#!/bin/sh\n# apt-get install qemu-guest-agent\n", false, false},
		{"plain text", "hello qemu-guest-agent", false, false},
		{"multipart cloud-config", multipartDoc([2]string{"text/x-shellscript", "#!/bin/sh\necho hi"},
			[2]string{"text/cloud-config", "#cloud-config\npackages: [qemu-guest-agent]"}), true, false},
		{"multipart base64 shell", multipartDoc([2]string{"text/x-shellscript", "b64:#!/bin/sh\napt install qemu-guest-agent -y"}), true, false},
		{"multipart without agent", multipartDoc([2]string{"text/cloud-config", "#cloud-config\npackages: [curl]"}), false, false},
		{"gzip cloud-config", gzipped("#cloud-config\npackages: [qemu-guest-agent]\n"), true, false},
		{"jinja header", "## template: jinja\n#cloud-config\npackages: [qemu-guest-agent]\n", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := userDataInstallsAgent([]byte(tt.data))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
