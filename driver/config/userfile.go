package config

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// Limits of the files a user names in a flag.
const (
	// MaxKeyFileBytes is the largest SSH key file read (an RSA key of
	// 16384 bits, the largest ssh-keygen makes, is about 13 KiB).
	MaxKeyFileBytes = 64 << 10
	// fileReadTimeout bounds reading one such file (a hung network
	// file system, a file that never ends).
	fileReadTimeout = 10 * time.Second
)

// ReadUserFile reads the regular file at path (what names it, for
// messages; callers name the flag), at most limit bytes, within
// fileReadTimeout. A FIFO,
// a device (/dev/zero), a socket or a directory is refused without being
// read: a FIFO would block until someone writes to it and a device may
// never end. The file's content never appears in an error.
func ReadUserFile(what, path string, limit int64) ([]byte, error) {
	// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a
	// writer; a regular file ignores it.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", what, err)
	}
	defer f.Close() //nolint:errcheck // read only
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", what, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s (%s) is %s, not a regular file; give the path of the file itself", path, what, fileKind(info.Mode()))
	}
	if info.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes; %s may be at most %d bytes", path, info.Size(), what, limit)
	}
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(f, limit+1))
		done <- result{b, err}
	}()
	select {
	case r := <-done:
		switch {
		case r.err != nil:
			return nil, fmt.Errorf("cannot read %s: %w", what, r.err)
		case int64(len(r.b)) > limit:
			return nil, fmt.Errorf("%s is larger than %d bytes, the most %s may be", path, limit, what)
		}
		return r.b, nil
	case <-time.After(fileReadTimeout):
		return nil, fmt.Errorf("reading %s from %s did not end within %s", what, path, fileReadTimeout)
	}
}

// fileKind names a file type that is not a regular file.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file (" + m.Type().String() + ")"
}
