package harvesterapi

// What the process deleted and then saw gone. A wait for an object's
// deletion that watches from a resource version never sees a deletion
// that happened before it, and would wait out its whole timeout: an
// object this process asked to delete and then saw gone (the delete or a
// Get answered NotFound, or a wait saw it go) ends such a wait at once,
// without a request. Only objects the process asked to delete count: an
// object found missing before (a VMI before its VM starts, a volume
// Harvester has not made yet) may be made by others later. A create of
// the name forgets it.

func goneKey(kind, ns, name string) string { return kind + " " + ref(ns, name) }

// Gone reports whether this process asked to delete kind ns/name and then
// saw no object of that name left (and has not created one since).
func (s *Seen) Gone(kind, ns, name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gone[goneKey(kind, ns, name)]
}

// deleting records that the process asks to delete kind ns/name.
func (s *Seen) deleting(kind, ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asked == nil {
		s.asked = map[string]bool{}
	}
	s.asked[goneKey(kind, ns, name)] = true
}

// sawAbsent records that no object kind ns/name exists; it counts for Gone
// once the process has asked to delete it.
func (s *Seen) sawAbsent(kind, ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := goneKey(kind, ns, name)
	if !s.asked[key] {
		return
	}
	if s.gone == nil {
		s.gone = map[string]bool{}
	}
	s.gone[key] = true
}

// created forgets kind ns/name: the process made one again.
func (s *Seen) created(kind, ns, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := goneKey(kind, ns, name)
	delete(s.asked, key)
	delete(s.gone, key)
}

// noteAbsent records kind ns/name as absent when err is the API server's
// NotFound of that object, and returns err.
func (s *Seen) noteAbsent(kind, ns, name string, err error) error {
	if ObjectNotFound(err, name) {
		s.sawAbsent(kind, ns, name)
	}
	return err
}

// SawDeleted records that a watch saw kind ns/name, an object this process
// created, deleted (or replaced) by someone else: it counts for Gone, so a
// later wait for its deletion does not wait for an event it cannot see.
func (s *Seen) SawDeleted(kind, ns, name string) {
	s.deleting(kind, ns, name)
	s.sawAbsent(kind, ns, name)
}
