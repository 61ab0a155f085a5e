package simtest

import (
	"context"
	"errors"
	"os/exec"
	"strings"
)

// RunBin runs bin/<name> with args and returns its stdout, its stderr and
// its exit status; the error is only for a binary that is missing or
// could not run.
func RunBin(ctx context.Context, name string, args ...string) (stdout, stderr string, code int, err error) {
	bin, err := Bin(name)
	if err != nil {
		return "", "", 0, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return out.String(), errb.String(), ee.ExitCode(), nil
	}
	return out.String(), errb.String(), 0, err
}
