package api

// CutOff begins a shutdown without waiting: new requests are answered
// 503, analyses and chart work stop, and transfers still open stop
// reading (an upload answers 503, its run not stored). Close must still
// be called.
func (s *Server) CutOff() {
	s.closeMu.Lock()
	s.closed = true
	s.closeMu.Unlock()
	s.cancel()
}
