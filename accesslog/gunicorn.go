package accesslog

import (
	"fmt"
	"strings"
)

// GunicornDefault is gunicorn's default access_log_format.
const GunicornDefault = `%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s"`

// GunicornWorkerTime is GunicornDefault with the worker's own time in
// microseconds and the Host header: what `stampede backend --access-log`
// writes, and what a gunicorn run with
// --access-logformat '...%(D)s "%({host}i)s"' leaves for import.
const GunicornWorkerTime = GunicornDefault + ` %(D)s "%({host}i)s"`

// gunicornAtoms are gunicorn's atoms (glogging.Logger.atoms) and how each
// is read.
var gunicornAtoms = map[string]kind{
	"h": kAddr, "l": kSkip, "u": kSkip, "t": kTimeBracket, "r": kRequest,
	"m": kMethod, "U": kURI, "q": kSkip, "H": kSkip, "s": kStatus,
	"B": kBytes, "b": kBytes, "f": kSkip, "a": kSkip, "T": kWholeSeconds,
	"D": kMicros, "M": kMillis, "L": kSeconds, "p": kSkip,
}

// CompileGunicorn compiles a gunicorn access_log_format ("" for gunicorn's
// default). %(D)s (microseconds), %(M)s, %(L)s and %(T)s are the worker's
// time on the request; %({host}i)s is the Host header. An atom gunicorn
// does not have, or a %( not closed by )s, is an error that names it.
func CompileGunicorn(src string) (*Format, error) {
	body := strings.TrimSpace(src)
	if body == "" {
		body = GunicornDefault
	}
	f := &Format{source: src, label: "gunicorn log format", esc: escNone}
	var lit []byte
	for i := 0; i < len(body); {
		switch {
		case strings.HasPrefix(body[i:], "%%"):
			lit = append(lit, '%')
			i += 2
			continue
		case !strings.HasPrefix(body[i:], "%("):
			lit = append(lit, body[i])
			i++
			continue
		}
		if len(lit) > 0 {
			f.segs = append(f.segs, segment{lit: lit})
			lit = nil
		}
		i += 2
		end := strings.Index(body[i:], ")s")
		if end < 0 {
			return nil, fmt.Errorf("gunicorn log format %q: %%( at byte %d is not closed by )s", src, i-2)
		}
		atom := body[i : i+end]
		i += end + 2
		k, err := gunicornAtom(atom)
		if err != nil {
			return nil, fmt.Errorf("gunicorn log format %q: %w", src, err)
		}
		f.segs = append(f.segs, segment{name: "%(" + atom + ")s", kind: k})
	}
	if len(lit) > 0 {
		f.segs = append(f.segs, segment{lit: lit})
	}
	if err := f.finish(); err != nil {
		return nil, err
	}
	return f, nil
}

func gunicornAtom(atom string) (kind, error) {
	if k, ok := gunicornAtoms[atom]; ok {
		return k, nil
	}
	if len(atom) > 3 && atom[0] == '{' {
		if close := strings.IndexByte(atom, '}'); close > 1 && close == len(atom)-2 {
			name, which := strings.ToLower(atom[1:close]), atom[close+1]
			switch which {
			case 'i':
				if name == "host" {
					return kHost, nil
				}
				return kSkip, nil
			case 'o', 'e':
				return kSkip, nil
			}
		}
	}
	return 0, fmt.Errorf("%%(%s)s is not a gunicorn atom (want e.g. %%(D)s, %%(L)s, %%(r)s, %%({host}i)s)", atom)
}
