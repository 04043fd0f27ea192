package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"stampede/limit"
)

// maxFileSize bounds what Load reads; a scenario is a page of YAML.
const maxFileSize = 4 << 20

// LoadWith reads, checks and completes the scenario in the file at path,
// with --set overrides ("PATH=VALUE", in order, later ones winning) applied
// to the file before it is checked, so that an override is held to the same
// rules as the file; they are recorded in Settings. A bad file gives an
// *Error naming the line, the field and a good value. (It is not called
// Load, which names a tenant's load.)
func LoadWith(path string, sets []string) (*Scenario, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error(), Err: err}
	}
	return ParseWith(path, data, sets)
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("larger than %d MiB; is it a scenario?", maxFileSize>>20)
	}
	return data, nil
}

// Parse reads a scenario from data; name is the file name errors give.
func Parse(name string, data []byte) (*Scenario, error) { return ParseWith(name, data, nil) }

// ParseWith is Parse with --set overrides, as LoadWith.
func ParseWith(name string, data []byte, sets []string) (*Scenario, error) {
	return parseWith(name, data, sets, nil)
}

// parseWith is ParseWith taking the trace from cached when it is not nil.
func parseWith(name string, data []byte, sets []string, cached *Trace) (*Scenario, error) {
	root, perr := parseDocument(name, data)
	if perr != nil {
		return nil, perr
	}
	origin, settings, err := applySets(name, root, sets)
	if err != nil {
		return nil, err
	}
	d := &decoder{file: name, origin: origin}
	sc := d.decode(root)
	if len(d.errs) == 0 && len(sc.Sweep) > 0 {
		d.checkSweep(root, sc.Sweep)
	}
	if err := joinErrors(d.errs); err != nil {
		return nil, err
	}
	if err := sc.attachTrace(name, cached); err != nil {
		return nil, err
	}
	sc.Settings = settings
	sc.src = data
	sc.sets = append([]string(nil), sets...)
	return sc, nil
}

// applySets applies sets to root in order and returns the nodes they put
// in, each with its "PATH=VALUE", and the settings they made.
func applySets(name string, root *yaml.Node, sets []string) (origin map[*yaml.Node]string, settings map[string]string, err error) {
	origin = map[*yaml.Node]string{}
	settings = map[string]string{}
	var errs []*Error
	for _, s := range sets {
		path, value, err := ParseSet(s)
		if err == nil {
			err = applySet(root, path, value, origin)
		}
		if err != nil {
			errs = append(errs, &Error{File: name, Set: s, Msg: err.Error(), Err: err})
			continue
		}
		settings[path] = value
	}
	return origin, settings, joinErrors(errs)
}

// ParseBackend reads a backend section made only of --set overrides
// (backend.workers=8, ...) over every default, held to the rules of a
// scenario file's backend; its routes may be left out. It is how the
// backend command checks its flags; name is what errors call the source.
func ParseBackend(name string, sets []string) (Backend, error) {
	root := &yaml.Node{Kind: yaml.MappingNode}
	origin, _, err := applySets(name, root, sets)
	if err != nil {
		return Backend{}, err
	}
	d := &decoder{file: name, origin: origin, routesOptional: true}
	var b Backend
	top := d.mapping(root, "", "backend: {workers: 8}", []string{"backend"})
	n := &yaml.Node{Kind: yaml.MappingNode}
	if top != nil && top.get("backend") != nil {
		n = top.get("backend")
	}
	d.backend(n, &b)
	return b, joinErrors(d.errs)
}

// parseDocument parses data into the node tree of its one document and
// returns the top node.
func parseDocument(name string, data []byte) (root *yaml.Node, err *Error) {
	defer func() {
		// The YAML parser is not ours; a panic in it is a bad file, not a
		// crash of the caller.
		if r := recover(); r != nil {
			root, err = nil, &Error{File: name, Msg: fmt.Sprintf("cannot parse the YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if e := dec.Decode(&doc); e != nil {
		if errors.Is(e, io.EOF) {
			return nil, &Error{File: name, Msg: "the file is empty (want e.g. name: stock-balance, duration: 10m, backend: ..., tenants: ...)"}
		}
		return nil, syntaxError(name, e)
	}
	var extra yaml.Node
	if e := dec.Decode(&extra); e == nil {
		return nil, &Error{File: name, Line: extra.Line, Col: extra.Column, Msg: "a second YAML document (---); a scenario file holds one"}
	} else if !errors.Is(e, io.EOF) {
		return nil, syntaxError(name, e)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &Error{File: name, Msg: "the file holds no YAML document"}
	}
	return doc.Content[0], nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

var contextErrors = []string{
	"found undefined tag handle",
	"did not find expected node content",
	"did not find expected '-' indicator",
	"did not find expected key",
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
}

// syntaxError turns the YAML parser's error into an *Error with its line.
func syntaxError(name string, err error) *Error {
	msg := err.Error()
	e := &Error{File: name, Err: err}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
		// For these parser errors the YAML package gives the 0-based line
		// where the enclosing block or node starts.
		for _, p := range contextErrors {
			if msg == p {
				e.Line++
				msg += " in the block that starts here"
				break
			}
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	e.Msg = "bad YAML: " + msg
	return e
}

// checkSweep plays every value of every axis through the override
// mechanism, so that a sweep that would fail at its fourth point fails now,
// at the line of that value.
func (d *decoder) checkSweep(root *yaml.Node, axes []Axis) {
	for ai, a := range axes {
		nodes := d.sweepValues[ai]
		for vi, v := range a.Values {
			origin := map[*yaml.Node]string{}
			tree := deepCopy(root, d.origin, origin)
			where := nodes[vi]
			if err := applySet(tree, a.Path, v, origin); err != nil {
				d.fail(where, index("sweep["+strconv.Itoa(ai)+"].values", vi), err, "%s=%s: %v", a.Path, v, err)
				continue
			}
			pd := &decoder{file: d.file, origin: origin}
			pd.decode(tree)
			if len(pd.errs) > 0 {
				e := joinErrors(pd.errs).(*Error)
				msg := e.Msg
				if e.Path != "" {
					msg = e.Path + ": " + msg
				}
				d.fail(where, index("sweep["+strconv.Itoa(ai)+"].values", vi), e, "%s=%s: %s", a.Path, v, msg)
			}
		}
	}
}

// With returns the scenario read again from the same file contents with
// the overrides that made it and then sets; each point of a sweep is
// s.With(axis.Path + "=" + value).
func (s *Scenario) With(sets ...string) (*Scenario, error) {
	if s.src == nil {
		return nil, fmt.Errorf("scenario %s: With needs a scenario made by Load or Parse", s.Name)
	}
	all := append(append([]string(nil), s.sets...), sets...)
	cached := s.trace
	if cached != nil && s.TraceFile == "" {
		cached = nil
	}
	sc, err := parseWith(s.File, s.src, all, cached)
	if err == nil && sc.TraceFile != s.TraceFile && cached != nil {
		// An override named another trace: read that one.
		sc, err = parseWith(s.File, s.src, all, nil)
	}
	return sc, err
}

// checkKey checks an nginx key expression.
func checkKey(s string) error {
	_, err := limit.ParseKey(s)
	return err
}

// checkReqRate checks a limit_req rate, "10r/s" or "30r/m".
func checkReqRate(s string) error {
	_, err := limit.ParseRate(s)
	return err
}

// checkSize checks a zone size, "10m".
func checkSize(s string) error {
	n, err := limit.ParseSize(s)
	if err != nil {
		return err
	}
	if n < limit.MinZone {
		return fmt.Errorf("%q is too small (nginx wants at least %dk)", s, limit.MinZone/1024)
	}
	return nil
}
