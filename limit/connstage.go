package limit

// ConnDecision is the limit_conn stage's decision.
type ConnDecision struct {
	Verdict Verdict
	Rule    int // the rule that rejected; -1 if none
	Status  int // the status to answer when Verdict is Rejected
}

// Slots holds the limit_conn slots one request took. Its zero value holds
// none. Release frees them all; calling it again on the same Slots does
// nothing.
type Slots struct {
	n     int
	small [4]Slot
	more  []Slot
}

// Release frees every slot held. A second call on the same Slots is a no-op.
func (s *Slots) Release() {
	for i := 0; i < s.n; i++ {
		if i < len(s.small) {
			s.small[i].Release()
		} else {
			s.more[i-len(s.small)].Release()
		}
	}
	s.n = 0
	s.more = s.more[:0]
}

// ConnStage takes a slot from every limit_conn in order (keys[i] for
// p.Conn[i]). When one rejects, the slots already taken are released and
// the returned Slots holds none. When the rejecting limit is in dry run the
// verdict is RejectedDryRun: the request goes on holding no slot of its
// pass and the limits after it in that pass are not checked, as nginx
// does; the slots of the enforced limits beside it are kept. Skipped means
// no limit counted the request (every key empty or over MaxConnKey bytes).
// The caller must Release the returned Slots when the request ends.
func (p *Policy) ConnStage(keys []string) (Slots, ConnDecision) {
	var s Slots
	d := ConnDecision{Verdict: Skipped, Rule: -1}
	for _, idx := range p.connPasses {
		from := s.n
		counted := false
		for _, i := range idx {
			slot, v := p.Conn[i].Limiter.Acquire(keyAt(keys, i))
			switch v {
			case Skipped:
				continue
			case Rejected:
				s.releaseFrom(from)
				r := &p.Conn[i]
				if !r.Spec.DryRun {
					s.Release()
					return Slots{}, ConnDecision{Verdict: Rejected, Rule: i, Status: r.Spec.Status}
				}
				// nginx's ngx_http_limit_conn_cleanup_all for this
				// pass; the pass ends here.
				return s, ConnDecision{Verdict: RejectedDryRun, Rule: i, Status: r.Spec.Status}
			}
			counted = true
			s.add(slot)
		}
		if counted {
			d = ConnDecision{Verdict: Passed, Rule: -1}
		}
	}
	return s, d
}

// add appends a slot taken in this pass.
func (s *Slots) add(sl Slot) {
	if s.n < len(s.small) {
		s.small[s.n] = sl
	} else {
		s.more = append(s.more, sl)
	}
	s.n++
}

// releaseFrom frees the slots taken from the from-th on, keeping the
// earlier ones.
func (s *Slots) releaseFrom(from int) {
	for i := from; i < s.n; i++ {
		if i < len(s.small) {
			s.small[i].Release()
		} else {
			s.more[i-len(s.small)].Release()
		}
	}
	if extra := from - len(s.small); extra >= 0 {
		s.more = s.more[:extra]
	} else {
		s.more = s.more[:0]
	}
	s.n = min(s.n, from)
}

// Len returns how many slots s holds.
func (s *Slots) Len() int { return s.n }
