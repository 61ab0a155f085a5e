// Package version is the release version of the product binaries, stamped
// at build time by `make release`:
//
//	-ldflags "-X github.com/harvester-kit/harvester-machine/internal/version.Version=v1.2.3"
package version

// Version is the release version; "dev" when not stamped.
var Version = "dev"

// String is the version line the binaries print and log.
func String(binary string) string { return binary + " " + Version }
