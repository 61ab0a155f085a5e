package sim

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/harvester-kit/harvester-machine/sim/hapiserver"
)

// harvesterLog reads what Harvester's API server logged
// (DIR/logs/harvester.log, logrus' text format) after a mark: where
// Harvester only logs what its controllers decided (the nodedrain
// controller's refusal, the drain's skips and evictions), the log is
// the only place that says it.
type harvesterLog struct {
	path   string
	offset int64
}

// markHarvesterLog marks the log's end now (the process appends to it).
func markHarvesterLog(stateDir string) harvesterLog {
	l := harvesterLog{path: filepath.Join(stateDir, "logs", hapiserver.Binary+".log")}
	if fi, err := os.Stat(l.path); err == nil {
		l.offset = fi.Size()
	}
	return l
}

// messages are the msg fields of the lines logged since the mark that
// contain every one of words.
func (l harvesterLog) messages(words ...string) []string {
	f, err := os.Open(l.path)
	if err != nil {
		return nil
	}
	defer func() { _ = f.Close() }()
	if fi, err := f.Stat(); err == nil && fi.Size() >= l.offset {
		_, _ = f.Seek(l.offset, io.SeekStart)
	}
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
lines:
	for sc.Scan() {
		line := sc.Text()
		for _, w := range words {
			if !strings.Contains(line, w) {
				continue lines
			}
		}
		if msg, ok := logMessage(line); ok {
			out = append(out, msg)
		}
	}
	return out
}

// logMessage is the msg field of a logrus text line (quoted as Go quotes
// it when it holds spaces or quotes).
func logMessage(line string) (string, bool) {
	_, rest, ok := strings.Cut(line, " msg=")
	if !ok {
		return "", false
	}
	if q, err := strconv.QuotedPrefix(rest); err == nil {
		s, err := strconv.Unquote(q)
		return s, err == nil
	}
	word, _, _ := strings.Cut(rest, " ")
	return word, true
}

// controllerError waits (until ctx ends) for the error a wrangler handler
// of Harvester returned for key after the mark, as wrangler logs it
// ("error syncing 'KEY': handler NAME: ERROR, requeuing"), and returns
// ERROR, or "" when none came. The handler removes the request's
// annotations before it returns the error, so the line may follow
// shortly after what the caller saw.
func (l harvesterLog) controllerError(ctx context.Context, key, handler string) string {
	prefix := "error syncing '" + key + "': handler " + handler + ": "
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, m := range l.messages(prefix) {
			if s, ok := strings.CutPrefix(m, prefix); ok {
				return strings.TrimSuffix(s, ", requeuing")
			}
		}
		select {
		case <-ctx.Done():
			return ""
		case <-tick.C:
		}
	}
}
