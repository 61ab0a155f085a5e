// Command harvester-sim runs a simulated Harvester for tests and demos.
package main

import (
	"fmt"
	"os"

	"github.com/harvester-kit/harvester-machine/sim"
)

func main() {
	if err := sim.NewApp().Run(os.Args); err != nil {
		fmt.Fprintln(os.Stderr, "harvester-sim:", err)
		os.Exit(1)
	}
}
