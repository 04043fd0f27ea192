package scenarios

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Error is a bad scenario: where the mistake is, in which field, and what
// would be right. When a file has several mistakes the Error is the first
// and More holds the rest, in file order. The CLI answers every *Error with
// exit status 2.
type Error struct {
	File string // the file as named to Load or Parse
	Line int    // 1-based line of the bad value; 0 when unknown
	Col  int    // 1-based column; 0 when unknown
	// Set is the "--set PATH=VALUE" the bad value came from; empty when it
	// came from the file.
	Set  string
	Path string // the field, as tenants[1].load.rate; empty for the whole file
	Msg  string // what is wrong and an example of a good value
	Err  error  // the underlying error (for errors.Is), or nil
	More []*Error

	missing bool // a required field is absent: listed after the mistakes that are there to see
}

// maxShown bounds how many mistakes one message lists.
const maxShown = 20

// Error returns one line per mistake, as
// "scenario stock.yaml:14:9: tenants[1].load.rate: "fast" is not a rate (want e.g. 5/s)".
func (e *Error) Error() string {
	var b strings.Builder
	e.line(&b)
	for i, m := range e.More {
		if i+1 >= maxShown {
			fmt.Fprintf(&b, "\n(and %d more)", len(e.More)-i)
			break
		}
		b.WriteByte('\n')
		m.line(&b)
	}
	return b.String()
}

func (e *Error) line(b *strings.Builder) {
	b.WriteString("scenario ")
	b.WriteString(e.File)
	if e.Line > 0 {
		b.WriteString(":" + strconv.Itoa(e.Line))
		if e.Col > 0 {
			b.WriteString(":" + strconv.Itoa(e.Col))
		}
	}
	b.WriteString(": ")
	if e.Set != "" {
		b.WriteString("--set " + e.Set + ": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// All returns e and every further mistake, in order.
func (e *Error) All() []*Error {
	return append([]*Error{e}, e.More...)
}

// joinErrors orders errs as they appear (the file's first, then those of
// --set overrides) and folds them into one *Error; nil when there are none.
func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		if fa, fb := a.Set == "", b.Set == ""; fa != fb || !fa {
			return cmp.Compare(b2i(!fa), b2i(!fb))
		}
		if a.missing != b.missing {
			return cmp.Compare(b2i(a.missing), b2i(b.missing))
		}
		if c := cmp.Compare(a.Line, b.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Col, b.Col)
	})
	first := *errs[0]
	first.More = nil
	for _, e := range errs[1:] {
		c := *e
		c.More = nil
		first.More = append(first.More, &c)
	}
	return &first
}

// suggest returns ` (did you mean "x"?)` when one of known is close to s.
func suggest(s string, known []string) string {
	best, bestD := "", 3
	for _, k := range known {
		d := editDistance(strings.ToLower(s), k)
		if d < bestD && d <= max(1, len(k)/3) {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the Levenshtein distance between a and b, counting an
// exchange of two neighbours as one edit (a common typo).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+c)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
