package limit

import "fmt"

// Verdict is what a stage decided for one request.
type Verdict uint8

const (
	Passed         Verdict = iota // admitted (possibly after Delay)
	Delayed                       // limit_req: admitted after Delay
	Rejected                      // answer Status
	RejectedDryRun                // would have been rejected; let through
	Skipped                       // no limit counted it (every key empty or too long)
)

// String names the verdict as nginx's $limit_req_status does.
func (v Verdict) String() string {
	switch v {
	case Passed:
		return "PASSED"
	case Delayed:
		return "DELAYED"
	case Rejected:
		return "REJECTED"
	case RejectedDryRun:
		return "REJECTED_DRY_RUN"
	case Skipped:
		return "SKIPPED"
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}
