package simtest

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Progress is a deadline that moves with progress, for tests whose
// duration depends on how busy the machine is: its context ends only when
// nothing progressed for a whole window (derive the window from a
// measurement on this machine, under its current load, not from an idle
// machine's timings).
type Progress struct {
	window time.Duration
	cancel context.CancelCauseFunc

	mu    sync.Mutex
	timer *time.Timer
	last  string
	at    time.Time
	count int
}

// NewProgress returns a Progress and its context, which ends when no
// progress was reported for window (its cause says what happened last),
// or when parent ends. Stop releases it.
func NewProgress(parent context.Context, window time.Duration) (*Progress, context.Context) {
	ctx, cancel := context.WithCancelCause(parent)
	p := &Progress{window: window, cancel: cancel, at: time.Now(), last: "start"}
	p.timer = time.AfterFunc(window, p.stalled)
	return p, ctx
}

func (p *Progress) stalled() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cancel(fmt.Errorf("no progress for %s (%d steps; the last, %s ago: %s)", p.window, p.count, time.Since(p.at).Round(time.Second), p.last))
}

// Step reports progress (what happened, for the message of a stall) and
// moves the deadline to a window from now.
func (p *Progress) Step(what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.at = what, time.Now()
	p.count++
	p.timer.Reset(p.window)
}

// Stop releases the Progress and ends its context.
func (p *Progress) Stop() {
	p.timer.Stop()
	p.cancel(context.Canceled)
}
