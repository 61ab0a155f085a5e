// Package hostile lists input values that break naive YAML, labels or
// shell quoting, for tests that generate artifacts (cloud-init, manifests,
// kubeconfigs) from user input and parse them back: the values must come
// back exactly, and no key may appear that the tool did not write.
package hostile

import "strings"

// Values are strings a user (or an attacker) may pass where the tools
// put free text: passwords, keys, tokens, file contents.
func Values() []string {
	return []string{
		`a"b'c`,
		"line1\nline2",
		"x\ninjected: true",
		"\"\ninjected: true\n\"",
		"key: value",
		"- item",
		"#cloud-config\nruncmd: [reboot]",
		"--- \nkind: Secret",
		"&anchor *alias !!binary",
		"{{ jinja }} {% if %}",
		"trailing space ",
		" leading space",
		"tab\there",
		"crlf\r\nline",
		"null",
		"true",
		"0x1F",
		"~",
		"ünï ☃ 日本語",
		"\u202eRTL override",
		strings.Repeat("x", 300),
		strings.Repeat("ab\n", 100),
		"nul\x00byte",
		"",
	}
}
