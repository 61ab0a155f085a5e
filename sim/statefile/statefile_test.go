package statefile

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWriteReplacesWholeAndPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new contents")); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "new contents" {
		t.Fatalf("read back %q, %v; want the new contents", got, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("mode %v, want 0600: these files hold tokens", perm)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left %d entries in the directory, want only the file: %v", len(entries), entries)
	}
}

// A reader racing many writers never sees an empty or partial file.
func TestWriteReaderSeesWholeFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	a, b := bytes.Repeat([]byte("a"), 64<<10), bytes.Repeat([]byte("b"), 64<<10)
	if err := Write(path, a); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, data := range [][]byte{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := Write(path, data); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 2000 {
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, a) && !bytes.Equal(got, b) {
			t.Fatalf("read %d bytes that are neither whole file", len(got))
		}
	}
	close(stop)
	wg.Wait()
}

func TestWriteMissingDirNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone", "token")
	err := Write(path, []byte("x"))
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(path)) {
		t.Fatalf("err %v, want one naming %s", err, path)
	}
}
