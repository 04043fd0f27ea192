package accesslog

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
)

// MaxLine bounds a line a Reader reads; a longer one is a bad line and
// is skipped to its end, so that memory stays bounded whatever the file.
const MaxLine = 256 << 10

// MaxReported is how many bad lines a Reader keeps for its report.
const MaxReported = 5

// Reader reads the lines of one log through a Format. The zero value is
// not usable; NewReader makes one. It is not safe for concurrent use.
type Reader struct {
	name   string
	format *Format
	br     *bufio.Reader
	gz     *gzip.Reader
	line   int64
	stats  Stats
	err    error
}

// Stats count what a Reader read.
type Stats struct {
	Lines    int64        // lines read, bad ones included
	Bad      int64        // lines that did not match the format
	Bytes    int64        // bytes read (uncompressed)
	FirstBad []*LineError // the first MaxReported bad lines
}

// NewReader returns a Reader of r, named name in its errors, through f. A
// gzip stream (by its magic bytes, whatever the name) is read through
// gzip, concatenated members included.
func NewReader(name string, r io.Reader, f *Format) (*Reader, error) {
	br := bufio.NewReaderSize(r, MaxLine)
	rd := &Reader{name: name, format: f, br: br}
	magic, err := br.Peek(2)
	if err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("reading %s as gzip: %w", name, err)
		}
		rd.gz = gz
		rd.br = bufio.NewReaderSize(gz, MaxLine)
	}
	return rd, nil
}

// Next reads the next line that matches the format into e and reports
// whether there was one; at the end, or on a read error (Err), it reports
// false. Lines that do not match are counted in Stats and skipped; an empty
// line is skipped and not counted as bad.
func (r *Reader) Next(e *Entry) bool {
	for r.err == nil {
		line, err := r.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			r.line++
			r.stats.Lines++
			n := int64(len(line))
			r.bad(&LineError{Line: r.line, Col: MaxLine, Want: fmt.Sprintf("a line of at most %d KiB", MaxLine>>10), Text: string(line[:200])})
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = r.br.ReadSlice('\n')
				n += int64(len(line))
			}
			r.stats.Bytes += n
			if err != nil {
				r.setErr(err)
			}
			continue
		}
		if len(line) == 0 && err != nil {
			r.setErr(err)
			return false
		}
		r.stats.Bytes += int64(len(line))
		r.line++
		if n := len(line); n > 0 && line[n-1] == '\n' {
			line = line[:n-1]
		}
		if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if err != nil {
			r.setErr(err)
		}
		if len(line) == 0 {
			continue
		}
		r.stats.Lines++
		if perr := r.format.Parse(line, e); perr != nil {
			le := perr.(*LineError)
			le.Line = r.line
			r.bad(le)
			continue
		}
		return true
	}
	return false
}

func (r *Reader) bad(le *LineError) {
	r.stats.Bad++
	if len(r.stats.FirstBad) < MaxReported {
		r.stats.FirstBad = append(r.stats.FirstBad, le)
	}
}

func (r *Reader) setErr(err error) {
	if errors.Is(err, io.EOF) {
		r.err = io.EOF
		return
	}
	r.err = fmt.Errorf("reading %s: %w", r.name, err)
}

// Compressed reports whether the Reader reads through gzip.
func (r *Reader) Compressed() bool { return r.gz != nil }

// Line returns the number of the line Next last read.
func (r *Reader) Line() int64 { return r.line }

// Stats returns the counts so far.
func (r *Reader) Stats() Stats { return r.stats }

// Err returns the error that stopped Next, or nil at the end of the file.
func (r *Reader) Err() error {
	if errors.Is(r.err, io.EOF) {
		return nil
	}
	return r.err
}
