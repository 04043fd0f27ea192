package limit

// maxKeptKeyBytes bounds the space a Keys keeps between requests, so that
// one request with huge headers does not pin memory in a reused Keys.
const maxKeptKeyBytes = 64 << 10

// Keys evaluates a Policy's keys, one request at a time, in space it
// reuses: the steady state allocates only the one string all of a
// request's keys share. The zero Keys is ready to use. A Keys is not safe
// for concurrent use; the strings it returns are, and stay valid.
type Keys struct {
	buf  []byte
	ends []int
	keys []string
}

// Eval returns r's key values for p's rules, req[i] for p.Req[i] and
// conn[i] for p.Conn[i], as ReqStage and ConnStage take them. A value
// longer than nginx counts (MaxReqKey, MaxConnKey) is returned empty: not
// counted. The slices are k's and are overwritten by the next Eval; the
// strings in them are never changed.
func (k *Keys) Eval(p *Policy, r *Request) (req, conn []string) {
	k.buf, k.ends, k.keys = k.buf[:0], k.ends[:0], k.keys[:0]
	for i := range p.Req {
		k.buf = p.Req[i].Key.Append(k.buf, r)
		k.ends = append(k.ends, len(k.buf))
	}
	for i := range p.Conn {
		k.buf = p.Conn[i].Key.Append(k.buf, r)
		k.ends = append(k.ends, len(k.buf))
	}
	// One string for all keys: the limiters may keep a key (as a map key)
	// after k is reused.
	all := string(k.buf)
	if cap(k.buf) > maxKeptKeyBytes {
		k.buf = nil
	}
	from := 0
	for i, to := range k.ends {
		v := all[from:to]
		longest := MaxConnKey
		if i < len(p.Req) {
			longest = MaxReqKey
		}
		if len(v) > longest {
			v = ""
		}
		k.keys = append(k.keys, v)
		from = to
	}
	return k.keys[:len(p.Req)], k.keys[len(p.Req):]
}

// Clear drops k's references to the last request's keys, so that a Keys
// kept for reuse holds on to none of them.
func (k *Keys) Clear() { clear(k.keys) }

// Keys returns r's key values for p's rules in slices of their own: Eval
// for a caller that keeps them, as the simulator keeps each client's.
func (p *Policy) Keys(r *Request) (req, conn []string) {
	var k Keys
	return k.Eval(p, r)
}
