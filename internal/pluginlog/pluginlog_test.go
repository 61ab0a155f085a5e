package pluginlog

import (
	"bytes"
	"testing"
)

func TestLevelsGoToTheirStreams(t *testing.T) {
	var progress, debug bytes.Buffer
	SetOutput(&progress, &debug)
	Infof("%s: creating VM", "m1")
	Warnf("cannot read %s", "x")
	Debugf("key in %s", "/tmp/k")
	if got, want := progress.String(), "m1: creating VM\ncannot read x\n"; got != want {
		t.Errorf("progress = %q, want %q", got, want)
	}
	if got, want := debug.String(), "key in /tmp/k\n"; got != want {
		t.Errorf("debug = %q, want %q", got, want)
	}
}
