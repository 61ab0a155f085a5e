// Package pluginlog is where the driver's log lines go when it runs as a
// rancher-machine plugin. rancher-machine prints every line of the plugin's
// stdout as its own output ("(machine) line"), and the plugin's stderr only
// with --debug. So the driver's progress (Info, Warn) goes to stdout, its
// debug lines to stderr, and Route sends the plugin library's own log
// (which the library switches to debug level, e.g. "Closing plugin on
// server side") to stderr: that line used to reach rancher-machine's stdout
// after the answer of `ip`, `url` or `status`, a second line for scripts.
package pluginlog

import (
	"fmt"
	"io"
	"os"
	"sync"

	machinelog "github.com/rancher/machine/libmachine/log"
)

var (
	mu  sync.Mutex
	out io.Writer = os.Stdout
	dbg io.Writer = os.Stderr
)

// Route sends the plugin library's log lines to stderr. Call it before
// plugin.RegisterDriver.
func Route() {
	machinelog.SetOutWriter(os.Stderr)
	machinelog.SetErrWriter(os.Stderr)
}

// SetOutput replaces the writers of progress and debug lines (tests).
func SetOutput(progress, debug io.Writer) {
	mu.Lock()
	defer mu.Unlock()
	out, dbg = progress, debug
}

func write(w *io.Writer, format string, args ...any) {
	mu.Lock()
	defer mu.Unlock()
	_, _ = fmt.Fprintf(*w, format+"\n", args...)
}

// Infof logs a progress line (the user sees it).
func Infof(format string, args ...any) { write(&out, format, args...) }

// Warnf logs a warning (the user sees it).
func Warnf(format string, args ...any) { write(&out, format, args...) }

// Debugf logs a line shown only with rancher-machine --debug.
func Debugf(format string, args ...any) { write(&dbg, format, args...) }
