package cloudinit

import (
	"bytes"
	"io"
	"mime"
	mimemultipart "mime/multipart"
	"net/mail"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// userMIME is user data as `cloud-init devel make-mime` or a hand-written
// MIME document would give it: two cloud-config parts, a script, a
// boothook, a text/plain script and a base64-encoded cloud-config part, and
// a nested multipart with one more script.
const userMIME = "Content-Type: multipart/mixed; boundary=\"OUTER\"\r\nMIME-Version: 1.0\r\n\r\n" +
	"--OUTER\r\nContent-Type: text/cloud-config; charset=\"us-ascii\"\r\n\r\n#cloud-config\npackages: [htop]\nruncmd:\n- echo one\n\r\n" +
	"--OUTER\r\nContent-Type: text/x-shellscript\r\n\r\n#!/bin/sh\necho script > /tmp/script\n\r\n" +
	"--OUTER\r\nContent-Type: text/cloud-config\r\n\r\nruncmd:\n- echo two\nhostname: from-mime\n\r\n" +
	"--OUTER\r\nContent-Type: text/cloud-boothook\r\n\r\n#cloud-boothook\necho boot\n\r\n" +
	"--OUTER\r\nContent-Type: text/plain\r\n\r\n#!/bin/bash\necho plain\n\r\n" +
	"--OUTER\r\nContent-Type: text/cloud-config\r\nContent-Transfer-Encoding: base64\r\n\r\nI2Nsb3VkLWNvbmZpZwp3cml0ZV9maWxlczoKLSBwYXRoOiAvZXRjL2Zyb20tYjY0CiAgY29udGVudDogaGkK\r\n" +
	"--OUTER\r\nContent-Type: multipart/mixed; boundary=\"INNER\"\r\n\r\n" +
	"--INNER\r\nContent-Type: text/x-shellscript-per-boot\r\n\r\n#!/bin/sh\necho nested\n\r\n--INNER--\r\n" +
	"\r\n--OUTER--\r\n"

func TestBuildMIMEGolden(t *testing.T) {
	got, err := Build(Input{User: "ubuntu", SSHAuthorizedKeys: []string{"ssh-ed25519 AAAA k"}, InstallQemuGuestAgent: true,
		UserData: []byte(userMIME), CloudConfig: []byte(rancherFile)})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "mime-merge.txt", got)
	parts := readParts(t, got)
	types := make([]string, len(parts))
	for i, p := range parts {
		types[i] = p.contentType
	}
	want := "text/cloud-config,text/x-shellscript,text/cloud-boothook,text/x-shellscript,text/x-shellscript-per-boot"
	if strings.Join(types, ",") != want {
		t.Fatalf("parts %v, want %s", types, want)
	}
	var cfg struct {
		Packages   []any       `yaml:"packages"`
		Runcmd     []any       `yaml:"runcmd"`
		Hostname   string      `yaml:"hostname"`
		WriteFiles []WriteFile `yaml:"write_files"`
	}
	if err := yaml.Unmarshal(parts[0].data, &cfg); err != nil {
		t.Fatal(err)
	}
	runcmd := strings.TrimSpace(strings.Join(strings.Fields(strings.Trim(strings.ReplaceAll(anyString(cfg.Runcmd), "\n", " "), "[]")), " "))
	for _, w := range []string{"echo one", "echo two", "sh /usr/local/custom_script/install.sh"} {
		if !strings.Contains(runcmd, w) {
			t.Errorf("runcmd lacks %q: %v", w, cfg.Runcmd)
		}
	}
	if last := cfg.Runcmd[len(cfg.Runcmd)-1]; last != "sh /usr/local/custom_script/install.sh" {
		t.Errorf("install script not last: %v", cfg.Runcmd)
	}
	// rancher-machine's file comes after the user data: its hostname wins
	if cfg.Hostname != "c1-pool1-abcde" {
		t.Errorf("hostname %q", cfg.Hostname)
	}
	if len(cfg.WriteFiles) < 2 || cfg.WriteFiles[0].Path != "/etc/from-b64" {
		t.Errorf("base64 part not merged: %+v", cfg.WriteFiles)
	}
	if !strings.Contains(anyString(cfg.Packages), "htop") || !strings.Contains(anyString(cfg.Packages), QemuGuestAgentPackage) {
		t.Errorf("packages %v", cfg.Packages)
	}
	if string(parts[1].data) != "#!/bin/sh\necho script > /tmp/script\n" {
		t.Errorf("script changed: %q", parts[1].data)
	}
	// Building the output again (as `harvester-bootstrap userdata` does with
	// its node part) keeps every part and adds none.
	again, err := Build(Input{CloudConfig: got})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(readParts(t, again)); n != len(parts) {
		t.Errorf("rebuilding the MIME output gave %d parts, want %d", n, len(parts))
	}
}

func anyString(v any) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}

type readPart struct {
	contentType string
	data        []byte
}

// readParts reads a multipart user-data document as cloud-init would.
func readParts(t *testing.T, data []byte) []readPart {
	t.Helper()
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("not MIME: %v\n%s", err, data)
	}
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	r := mimemultipart.NewReader(msg.Body, params["boundary"])
	var out []readPart
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(p)
		ct, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type"))
		out = append(out, readPart{ct, b})
	}
}

func TestBuildMIMEErrors(t *testing.T) {
	mimeOf := func(parts ...string) string {
		s := "Content-Type: multipart/mixed; boundary=B\n\n"
		for _, p := range parts {
			s += "--B\n" + p + "\n"
		}
		return s + "--B--\n"
	}
	cases := []struct{ name, data, want string }{
		{"unknown type", mimeOf("Content-Type: text/html\n\n<p>x</p>"), "user data: part 1: content type text/html is not supported"},
		{"gzip", mimeOf("Content-Type: text/cloud-config\n\ncontent: ok", "Content-Type: application/x-gzip\n\nxx"), "user data: part 2: content type application/x-gzip is not supported"},
		{"bad cloud-config", mimeOf("Content-Type: text/cloud-config\n\n- a list"), "user data: part 1: cloud-config must be a YAML mapping"},
		{"bad base64", mimeOf("Content-Type: text/cloud-config\nContent-Transfer-Encoding: base64\n\n!!!"), "user data: part 1: Content-Transfer-Encoding base64"},
		{"bad encoding", mimeOf("Content-Type: text/cloud-config\nContent-Transfer-Encoding: uuencode\n\nx"), `Content-Transfer-Encoding "uuencode" is not supported`},
		{"no boundary", "Content-Type: multipart/mixed\n\nx", "multipart/mixed without a boundary"},
		{"bad media type", "Content-Type: ;;;\n\nx", `the MIME document: Content-Type ";;;"`},
		{"nested too deep", nested(10), "nested more than 8 deep"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Build(Input{UserData: []byte(tc.data)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	// A single-part MIME document (no multipart) is handled by its type.
	got, err := Build(Input{UserData: []byte("Content-Type: text/x-shellscript\nMIME-Version: 1.0\n\n#!/bin/sh\necho single\n")})
	if err != nil {
		t.Fatal(err)
	}
	if p := readParts(t, got); len(p) != 2 || p[1].contentType != "text/x-shellscript" || string(p[1].data) != "#!/bin/sh\necho single\n" {
		t.Errorf("single-part MIME: %+v", p)
	}
}

// nested is a multipart document nested depth levels deep.
func nested(depth int) string {
	s := "Content-Type: text/x-shellscript\n\n#!/bin/sh\n"
	for i := 0; i < depth; i++ {
		b := "B" + strings.Repeat("x", i)
		s = "Content-Type: multipart/mixed; boundary=" + b + "\n\n--" + b + "\n" + s + "\n--" + b + "--\n"
	}
	return s
}
