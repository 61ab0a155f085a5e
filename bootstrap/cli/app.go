// Package cli wires the harvester-bootstrap commands (urfave/cli/v2) to
// the bootstrap and addons packages.
package cli

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ucli "github.com/urfave/cli/v2"
	"k8s.io/klog/v2"

	"github.com/harvester-kit/harvester-machine/internal/field"
	"github.com/harvester-kit/harvester-machine/internal/termsafe"
	"github.com/harvester-kit/harvester-machine/internal/version"
)

// userAgent names this tool in the API servers' audit logs.
const userAgent = "harvester-bootstrap"

// App returns the harvester-bootstrap application.
func App(stdout, stderr io.Writer) *ucli.App {
	return &ucli.App{
		Name:      "harvester-bootstrap",
		Version:   version.Version,
		Usage:     "kubeconfigs, cloud-provider/CSI add-ons and cluster config for guest clusters on Harvester",
		Writer:    stdout,
		ErrWriter: stderr,
		Description: "Artifacts go to stdout or --output FILE (0600 when they hold a credential); logs go to stderr.\n" +
			"Every flag can also be set with the environment variable " + EnvPrefix + "<FLAG_NAME>.",
		Commands: []*ucli.Command{
			kubeconfigCommand(), driverCredentialCommand(), addonCommand(), manifestsCommand(), applyCommand(),
			userdataCommand(), affinityCommand(), lbCommand(), nodedriverCommand(),
			doctorCommand(), gcCommand(), maintenanceCheckCommand(),
		},
		HideHelpCommand: true,
		ExitErrHandler:  func(*ucli.Context, error) {},
	}
}

// Run executes the application and returns the process exit code.
func Run(args []string, stdout, stderr io.Writer) int {
	// client-go logs through klog, e.g. an error line when a finished watch
	// is cancelled; every failure that matters is returned to us instead.
	klog.SetLogger(logr.Discard())
	if err := App(stdout, stderr).Run(args); err != nil {
		// An error may quote a cluster (an API server's message).
		fmt.Fprintf(stderr, "error: %s\n", termsafe.Lines(field.Rename(err, flagOf).Error()))
		return 1
	}
	return 0
}

// env is the environment variable of a flag.
func env(flag string) []string {
	return []string{EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))}
}

func logger(c *ucli.Context) *slog.Logger {
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func withTimeout(c *ucli.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.Context, c.Duration(FlagTimeout))
}

// Shared flags.
func kubeconfigFlag() ucli.Flag {
	return &ucli.StringFlag{Name: FlagKubeconfig, Usage: "kubeconfig of the Harvester cluster (default: $KUBECONFIG, then ~/.kube/config)",
		EnvVars: append(env(FlagKubeconfig), "KUBECONFIG")}
}

func outputFlag() ucli.Flag {
	return &ucli.StringFlag{Name: FlagOutput, Aliases: []string{"o"}, Usage: "write the artifact to `FILE` instead of stdout", EnvVars: env(FlagOutput)}
}

func timeoutFlag() ucli.Flag {
	return &ucli.DurationFlag{Name: FlagTimeout, Value: 2 * time.Minute, Usage: "deadline for all API calls and waits", EnvVars: env(FlagTimeout)}
}

// writeArtifact writes to stdout or to the --output file; secret files are
// created 0600 (an existing file is replaced, so old modes never leak).
func writeArtifact(c *ucli.Context, data []byte, secret bool) error {
	path := c.String(FlagOutput)
	if path == "" || path == "-" {
		_, err := c.App.Writer.Write(data)
		return err
	}
	mode := os.FileMode(0o644)
	if secret {
		mode = 0o600
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	logger(c).Info("wrote artifact", "file", path, "mode", fmt.Sprintf("%#o", mode))
	return nil
}

// writeSecretFile writes an extra credential file (0600).
func writeSecretFile(c *ucli.Context, path string, data []byte) error {
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	logger(c).Info("wrote artifact", "file", path, "mode", "0600")
	return nil
}
