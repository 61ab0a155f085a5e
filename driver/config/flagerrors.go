package config

import "github.com/harvester-kit/harvester-machine/internal/field"

// The driver's input errors are internal/field errors whose field is the
// flag as the user types it ("--harvester-disk-bus"): the driver is the
// front end that owns its flags, so a problem reads
// `--harvester-disk-bus: "ide" is not a disk bus; valid: ...` wherever it
// surfaces (validation, pre-create, create), with no renaming step, and
// field.Fields lists the flags at fault.

// FlagField is flag as the user types it, the field of its problems.
func FlagField(flag string) string { return "--" + flag }

// FlagProblem is a problem with the value of flag.
func FlagProblem(flag, format string, args ...any) *field.Error {
	return field.Problem(FlagField(flag), format, args...)
}

// FlagError is a problem with flag that err describes (and errors.Is sees).
func FlagError(flag string, err error) *field.Error {
	return field.Problem(FlagField(flag), "%v", err).Because(err)
}
