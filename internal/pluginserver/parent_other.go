//go:build !linux

package pluginserver

import "errors"

// watchParent is only implemented on Linux; elsewhere the heartbeat
// timeout ends the plugin.
func watchParent() (<-chan struct{}, error) {
	return nil, errors.New("not supported on this system")
}
