package harvesterapi

// What the process saw deleted. A wait for an object's deletion that
// watches from a resource version never sees a deletion that happened
// before it, and would wait out its whole timeout: an object the process
// already knows to be gone (a Get or delete answered NotFound, or a wait
// saw it go) ends such a wait at once, without a request. A create of the
// name forgets it.

func goneKey(kind, ns, name string) string { return kind + " " + ref(ns, name) }

// Gone reports whether the process saw no object kind ns/name exist (its
// Get or delete answered NotFound, or a wait for its deletion ended with
// none left) and has not created one since.
func (s *Seen) Gone(kind, ns, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone[goneKey(kind, ns, name)]
}

func (s *Seen) rememberGone(kind, ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone == nil {
		s.gone = map[string]bool{}
	}
	s.gone[goneKey(kind, ns, name)] = true
}

func (s *Seen) forgetGone(kind, ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.gone, goneKey(kind, ns, name))
}

// noteAbsent remembers kind ns/name as gone when err is the API server's
// NotFound of that object, and returns err.
func (s *Seen) noteAbsent(kind, ns, name string, err error) error {
	if ObjectNotFound(err, name) {
		s.rememberGone(kind, ns, name)
	}
	return err
}
