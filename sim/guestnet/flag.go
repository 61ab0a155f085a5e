// Package guestnet puts the simulated guests on a network: while a VMI
// runs, its addresses are on a local interface of the simulator's network
// namespace and an SSH server answers on port 22 of each as the guest
// would. It is meant for the private network namespace the end-to-end
// harness makes (test/harness): the host's own network never sees it.
package guestnet

// FlagInterface is harvester-sim's flag naming the interface guest
// addresses go on; without it the guest network is off.
const FlagInterface = "guest-interface"
