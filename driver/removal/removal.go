// Package removal deletes a machine: its VM, its volumes, its cloud-init
// Secret and its address claim, only what carries the machine's labels, and
// waits until they are gone.
package removal

import "github.com/harvester-kit/harvester-machine/driver/machine"

// Remover removes one machine.
type Remover struct{ *machine.Machine }
