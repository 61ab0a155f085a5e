package config

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Values documented as "plain or base64" are told apart like this: the value
// is used as it is when it already has the expected form (a JSON object, a
// YAML mapping, a #cloud-config / #! / jinja document). Otherwise it is
// decoded as base64 (standard or URL alphabet, padded or not, line breaks
// ignored), and the decoded text is used only if it is valid UTF-8 AND has
// the expected form. In every other case the value is kept as plain text, so
// validation can report it. A plain value that happens to be valid base64 is
// therefore never mistaken for an encoded one unless its decoding is itself
// a well-formed document of the expected kind.

// DecodePlainOrBase64 returns value, or its base64 decoding when only the
// decoding has the form accepted by ok.
func DecodePlainOrBase64(value string, ok func(string) bool) string {
	if strings.TrimSpace(value) == "" || ok(value) {
		return value
	}
	compact := strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, value)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		b, err := enc.DecodeString(compact)
		if err != nil || !utf8.Valid(b) {
			continue
		}
		if s := string(b); ok(s) {
			return s
		}
	}
	return value
}

// IsJSONObject reports whether s is a JSON object.
func IsJSONObject(s string) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &m) == nil
}

// IsYAMLMapping reports whether s is a non-empty YAML mapping.
func IsYAMLMapping(s string) bool {
	var m map[string]any
	return yaml.Unmarshal([]byte(s), &m) == nil && len(m) > 0
}

// IsUserData reports whether s looks like cloud-init user data.
func IsUserData(s string) bool {
	t := strings.TrimLeft(s, " \t\r\n\ufeff")
	for _, p := range []string{"#cloud-config", "#!", "## template: jinja", "#include", "#cloud-boothook", "#part-handler", "Content-Type:", "MIME-Version:"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return IsYAMLMapping(s)
}

// IsKubeconfig reports whether s is a YAML mapping with clusters.
func IsKubeconfig(s string) bool {
	var m map[string]any
	if yaml.Unmarshal([]byte(s), &m) != nil {
		return false
	}
	_, hasClusters := m["clusters"]
	return hasClusters
}
