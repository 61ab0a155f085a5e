package nodedriver

import (
	"strings"
	"testing"

	"github.com/harvester-kit/harvester-machine/internal/golden"
)

func TestNodeDriver(t *testing.T) {
	sum := golden.Must(SHA256(strings.NewReader("driver-binary")))
	if sum != "04fc498b3321147b26babc88a4323c6162d23c2a5e3679c56bda6c3abbb1e79e" {
		t.Fatalf("sum %s", sum)
	}
	out := golden.Must(BuildNodeDriver(NodeDriverSpec{Name: "harvester", URL: "https://releases.example.com/d/docker-machine-driver-harvester", Checksum: sum, WhitelistDomains: []string{"mirror.example.com"}}))
	golden.Assert(t, "nodedriver.yaml", out)
	_, err := BuildNodeDriver(NodeDriverSpec{Name: "Bad Name", URL: "ftp://x", UIURL: "nope", Checksum: "abc"})
	for _, w := range []string{"driver name \"Bad Name\"", "url \"ftp://x\"", "ui url \"nope\"", "checksum"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("want %q in %v", w, err)
		}
	}
}
