// Package statefile writes the files that other processes of the
// simulator, its commands and tests read while it runs (kubeconfigs, a
// Pod's ServiceAccount files, kube-vip's state, the ready, pid and URL
// files, freeze requests and answers) so that a reader sees the old file
// or all of the new one, never one that has been created and not yet
// filled.
package statefile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write writes data to path, readable by its owner only: into a new file
// beside it, then renamed over it. Two writers of one path each leave a
// whole file; the last rename wins.
func Write(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name() // CreateTemp makes it 0600
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
