package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadUserFile reads a regular file whole, and refuses one just over
// the limit.
func TestReadUserFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadUserFile("the file", path, 5); err != nil || string(b) != "12345" {
		t.Errorf("limit 5: %q, %v", b, err)
	}
	if _, err := ReadUserFile("the file", path, 4); err == nil || !strings.Contains(err.Error(), "is 5 bytes; the file may be at most 4 bytes") {
		t.Errorf("limit 4: %v", err)
	}
}
