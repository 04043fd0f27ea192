package limit

import "time"

// ReqDecision is the limit_req stage's decision.
type ReqDecision struct {
	Verdict Verdict
	Delay   time.Duration // how long to hold the request before the limit_conn stage
	Rule    int           // the rule that rejected or set the delay; -1 if none
	Status  int           // the status to answer when Verdict is Rejected
}

// ReqStage runs every limit_req for one request whose keys are keys
// (keys[i] for p.Req[i], as Key.Append gives them; "" means not counted) at
// now, with nginx's lookup-then-account semantics across several limits.
//
// As in nginx, every limit of a pass but the last counted one is first only
// checked against its burst, holding its key; the last is checked and
// accounted; then the held ones are accounted and the longest delay wins.
// When a limit rejects, the held keys are let go unaccounted and nothing is
// charged. A rejecting dry-run limit gives RejectedDryRun (let the request
// through, nothing charged by its pass, as nginx). A dry-run limit's delay
// is charged as nginx charges it but not waited for: if no enforced limit
// delays, the decision is Passed with Rule naming the dry-run limit that
// would have delayed. With enforced and dry-run limits mixed, a request the
// enforced pass rejects never reaches the dry-run pass; one it admits keeps
// the enforced pass's delay, whatever the dry-run pass says.
func (p *Policy) ReqStage(now time.Time, keys []string) ReqDecision {
	switch len(p.reqPasses) {
	case 0:
		return ReqDecision{Verdict: Skipped, Rule: -1}
	case 1:
		return p.reqPass(now, keys, p.reqPasses[0])
	}
	e := p.reqPass(now, keys, p.reqPasses[0])
	if e.Verdict == Rejected {
		return e
	}
	d := p.reqPass(now, keys, p.reqPasses[1])
	switch {
	case d.Verdict == RejectedDryRun:
		d.Delay = e.Delay
		return d
	case e.Verdict == Skipped && d.Verdict == Skipped:
		return d
	case e.Verdict == Delayed, e.Rule >= 0, d.Verdict == Skipped:
		return e
	}
	return d
}

// reqPass is one nginx limit_req pass over the rules idx, in order.
func (p *Policy) reqPass(now time.Time, keys []string, idx []int) ReqDecision {
	ms := unixMilli(now)
	// held[j] is the entry rule idx[j]'s lookup holds until it is
	// accounted or unlocked, as nginx's ctx->node.
	var small [8]heldEntry
	held := small[:0]
	if len(idx) > len(small) {
		held = make([]heldEntry, 0, len(idx))
	}
	rc, excess := lookupSkipped, int64(0)
	n := 0
	for ; n < len(idx); n++ {
		held = append(held, heldEntry{})
		key := keyAt(keys, idx[n])
		if key == "" || len(key) > MaxReqKey {
			continue
		}
		var e *reqEntry
		var sh *reqShard
		rc, excess, e, sh = p.Req[idx[n]].Limiter.lookup(key, ms, n == len(idx)-1)
		if rc != lookupAgain {
			break
		}
		held[n] = heldEntry{e, sh}
	}
	switch rc {
	case lookupSkipped:
		return ReqDecision{Verdict: Skipped, Rule: -1}
	case lookupBusy, lookupFull:
		for j := range n {
			if h := held[j]; h.e != nil {
				p.Req[idx[j]].Limiter.unlock(h.e, h.sh)
			}
		}
		spec := &p.Req[idx[n]].Spec
		if spec.DryRun {
			return ReqDecision{Verdict: RejectedDryRun, Rule: idx[n], Status: spec.Status}
		}
		return ReqDecision{Verdict: Rejected, Rule: idx[n], Status: spec.Status}
	case lookupAgain:
		// The last limit's key was not counted: nothing was accounted yet.
		excess = 0
	}
	// nginx's ngx_http_limit_req_account: the limit that ended the loop
	// sets the first delay; then every held limit, last to first, is
	// accounted and a strictly longer delay wins. A dry-run limit's delay
	// is accounted but not waited for.
	last := min(n, len(idx)-1)
	var wait, dry time.Duration
	waitRule, dryRule := -1, -1
	consider := func(i int, d time.Duration) {
		if p.Req[i].Spec.DryRun {
			if d > dry {
				dry, dryRule = d, i
			}
		} else if d > wait {
			wait, waitRule = d, i
		}
	}
	consider(idx[last], p.Req[idx[last]].Limiter.delayFor(excess))
	for j := n - 1; j >= 0; j-- {
		h := held[j]
		if h.e == nil {
			continue
		}
		l := p.Req[idx[j]].Limiter
		consider(idx[j], l.delayFor(l.account(h.e, h.sh, ms)))
	}
	switch {
	case wait > 0:
		return ReqDecision{Verdict: Delayed, Delay: wait, Rule: waitRule}
	case dry > 0:
		return ReqDecision{Verdict: Passed, Rule: dryRule}
	}
	return ReqDecision{Verdict: Passed, Rule: -1}
}

// heldEntry is a limit_req entry held between lookup and account.
type heldEntry struct {
	e  *reqEntry
	sh *reqShard
}

// lookupSkipped is ReqStage's "no limit counted the request" (nginx's
// NGX_DECLINED), next to lookup's results.
const lookupSkipped = -1
