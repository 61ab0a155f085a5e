package config

import (
	"encoding/base64"
	"testing"

	"github.com/harvester-kit/harvester-machine/driver/drivertest"
)

func TestDecodePlainOrBase64(t *testing.T) {
	cases := []struct {
		name, in, want string
		ok             func(string) bool
	}{
		{"plain json", `{"a":1}`, `{"a":1}`, IsJSONObject},
		{"base64 json", b64(`{"a":1}`), `{"a":1}`, IsJSONObject},
		{"raw url base64 json", base64.RawURLEncoding.EncodeToString([]byte(`{"a":"??>"}`)), `{"a":"??>"}`, IsJSONObject},
		{"wrapped base64", b64(`{"a":1}`)[:8] + "\n" + b64(`{"a":1}`)[8:], `{"a":1}`, IsJSONObject},
		{"plain user data that is valid base64", "abcd", "abcd", IsUserData},
		{"plain cloud-config", "#cloud-config\na: b\n", "#cloud-config\na: b\n", IsUserData},
		{"base64 script", b64("#!/bin/sh\necho hi\n"), "#!/bin/sh\necho hi\n", IsUserData},
		{"base64 of non-utf8", base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0x00}), base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0x00}), IsUserData},
		{"base64 of plain words stays plain", b64("hello world"), b64("hello world"), IsJSONObject},
		{"kubeconfig base64", b64(drivertest.Kubeconfig), drivertest.Kubeconfig, IsKubeconfig},
		{"empty", "", "", IsJSONObject},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := DecodePlainOrBase64(tc.in, tc.ok); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// FuzzDecodePlainOrBase64: the decoding returns the value itself or a
// decoding of it that has the expected form; it never panics.
func FuzzDecodePlainOrBase64(f *testing.F) {
	fuzzSeeds(f, `{"a":1}`, "abcd", "version: 2\n", "#cloud-config\n", "", "  \n", "YWJj\nZGVm", "e30", "e30=")
	forms := []func(string) bool{IsJSONObject, IsYAMLMapping, IsUserData, IsKubeconfig}
	f.Fuzz(func(t *testing.T, v string) {
		for _, ok := range forms {
			got := DecodePlainOrBase64(v, ok)
			if got != v && !ok(got) {
				t.Fatalf("decoded %q to %q, which does not have the expected form", v, got)
			}
		}
	})
}
