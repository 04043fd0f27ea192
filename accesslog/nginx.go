package accesslog

import (
	"fmt"
	"slices"
	"strings"

	"stampede/internal/levenshtein"
)

// Combined is nginx's predefined log format, the one access_log uses when
// it names none.
const Combined = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"`

// nginxUsed are the variables a Format reads into an Entry.
var nginxUsed = map[string]kind{
	"host":                   kHost,
	"server_name":            kHost,
	"http_host":              kHost,
	"remote_addr":            kAddr,
	"binary_remote_addr":     kSkip, // binary: unprintable, read and ignored
	"time_local":             kTimeLocal,
	"time_iso8601":           kTimeISO,
	"msec":                   kMsec,
	"request":                kRequest,
	"request_method":         kMethod,
	"request_uri":            kURI,
	"uri":                    kURI,
	"document_uri":           kURI,
	"status":                 kStatus,
	"request_time":           kSeconds,
	"upstream_response_time": kUpstreamTime,
	"upstream_connect_time":  kUpstreamConnect,
	"upstream_header_time":   kUpstreamHeader,
	"upstream_status":        kUpstreamStatus,
	"body_bytes_sent":        kBytes,
}

// nginxOther are nginx's other variables (core, http modules and the
// usual stream of ssl, proxy, realip, geoip ones): read and ignored.
var nginxOther = strings.Fields(`
	args binary_remote_addr bytes_sent connection connection_requests connection_time
	content_length content_type document_root gzip_ratio hostname https is_args
	limit_rate limit_conn_status limit_req_status nginx_version pid pipe
	proxy_add_x_forwarded_for proxy_host proxy_port proxy_protocol_addr
	proxy_protocol_port proxy_protocol_server_addr proxy_protocol_server_port
	query_string realip_remote_addr realip_remote_port realpath_root remote_port
	remote_user request_body request_body_file request_completion request_filename
	request_id request_length scheme sent_http_content_type server_addr server_port
	server_protocol time_local upstream_addr upstream_bytes_received upstream_bytes_sent
	upstream_cache_status upstream_queue_time upstream_response_length http2 http3
	ssl_cipher ssl_ciphers ssl_client_cert ssl_client_fingerprint ssl_client_i_dn
	ssl_client_s_dn ssl_client_serial ssl_client_verify ssl_curves ssl_early_data
	ssl_protocol ssl_server_name ssl_session_id ssl_session_reused tcpinfo_rtt
	tcpinfo_rttvar tcpinfo_snd_cwnd tcpinfo_rcv_space geoip_country_code
	geoip_country_name geoip_city geoip_region geoip_org gzip_ratio
	invalid_referer secure_link secure_link_expires uid_got uid_set uid_reset
	date_local date_gmt realip_remote_addr binary_remote_addr`)

// nginxPrefixes are the families of variables named by a prefix.
var nginxPrefixes = []string{"http_", "sent_http_", "sent_trailer_", "cookie_", "arg_", "upstream_http_", "upstream_cookie_", "upstream_trailer_", "jwt_", "ssl_", "geoip_", "geoip2_"}

// NginxOptions configure CompileNginx. The zero value compiles nginx's own
// variables only.
type NginxOptions struct {
	// Vars are variables of the configuration's own (map, set, geo),
	// without the $: read and ignored rather than refused as unknown.
	Vars []string
}

// CompileNginx compiles an nginx log format: "combined" (or "") for nginx's
// predefined one, the format string itself as it stands between the
// quotes, or a whole log_format directive pasted from nginx.conf
// (log_format main escape=json '...' '...';). A variable nginx does not
// have, an unterminated ${ or quote, or an unknown escape= is an error that
// names it.
func CompileNginx(src string, opts NginxOptions) (*Format, error) {
	body, esc, err := nginxDirective(src)
	if err != nil {
		return nil, err
	}
	f := &Format{source: src, label: "log format", esc: esc}
	for i := 0; i < len(body); {
		j := strings.IndexByte(body[i:], '$')
		if j < 0 {
			f.segs = append(f.segs, segment{lit: []byte(body[i:])})
			break
		}
		if j > 0 {
			f.segs = append(f.segs, segment{lit: []byte(body[i : i+j])})
		}
		i += j + 1
		name, end, err := varName(body, i)
		if err != nil {
			return nil, fmt.Errorf("log format %q: %w", src, err)
		}
		i = end
		if name == "" {
			return nil, fmt.Errorf("log format %q: a $ at byte %d names no variable (want e.g. $request_time)", src, i)
		}
		k, err := nginxVar(name, opts)
		if err != nil {
			return nil, fmt.Errorf("log format %q: %w", src, err)
		}
		f.segs = append(f.segs, segment{name: "$" + name, kind: k})
	}
	if err := f.finish(); err != nil {
		return nil, err
	}
	return f, nil
}

// varName reads the name of the variable whose $ is just before body[i]:
// ${name} or the run of name bytes, and returns where it ends.
func varName(body string, i int) (name string, end int, err error) {
	if strings.HasPrefix(body[i:], "{") {
		n := strings.IndexByte(body[i:], '}')
		if n < 0 {
			return "", 0, fmt.Errorf("${ at byte %d has no closing }", i)
		}
		return body[i+1 : i+n], i + n + 1, nil
	}
	n := strings.IndexFunc(body[i:], func(r rune) bool { return r >= 0x80 || !isVarByte(byte(r)) })
	if n < 0 {
		n = len(body) - i
	}
	return body[i : i+n], i + n, nil
}

func isVarByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// nginxVar says how a variable is read, or why it cannot be.
func nginxVar(name string, opts NginxOptions) (kind, error) {
	lower := strings.ToLower(name)
	if k, ok := nginxUsed[lower]; ok {
		return k, nil
	}
	if slices.Contains(nginxOther, lower) || slices.Contains(opts.Vars, name) {
		return kSkip, nil
	}
	for _, p := range nginxPrefixes {
		if strings.HasPrefix(lower, p) && len(lower) > len(p) {
			return kSkip, nil
		}
	}
	if len(name) > 0 && name[0] >= '0' && name[0] <= '9' {
		return kSkip, nil // a regex capture, $1
	}
	msg := fmt.Sprintf("$%s is not an nginx variable", name)
	if s := closest(lower); s != "" {
		msg += fmt.Sprintf(" (did you mean $%s?)", s)
	}
	return 0, fmt.Errorf("%s; if your configuration defines it with map or set, name it with --log-var %s", msg, name)
}

// closest returns the known variable nearest to name, if near enough.
func closest(name string) string {
	best, bestD := "", 3
	try := func(v string) {
		if d := levenshtein.Distance(name, v); d < bestD {
			best, bestD = v, d
		}
	}
	for v := range nginxUsed {
		try(v)
	}
	for _, v := range nginxOther {
		try(v)
	}
	return best
}

// nginxDirective returns the format text of src and its escaping: src may
// be a name (combined), the bare format, or a log_format directive whose
// quoted strings nginx concatenates.
func nginxDirective(src string) (string, escaping, error) {
	s := strings.TrimSpace(src)
	if s == "" || s == "combined" {
		return Combined, escDefault, nil
	}
	if !strings.HasPrefix(s, "log_format") || len(s) > len("log_format") && !isSpace(s[len("log_format")]) {
		if s[0] == '\'' || s[0] == '"' {
			parts, rest, err := quoted(s, src)
			if err != nil {
				return "", 0, err
			}
			if strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), ";")) != "" {
				return "", 0, fmt.Errorf("log format %q: text %q after the quoted strings", src, rest)
			}
			return parts, escDefault, nil
		}
		return s, escDefault, nil
	}
	words := strings.TrimSpace(s[len("log_format"):])
	name, rest, _ := strings.Cut(words, " ")
	if name == "" {
		return "", 0, fmt.Errorf("log format %q: log_format without a name (want e.g. log_format main '$host $request_time';)", src)
	}
	rest = strings.TrimSpace(rest)
	esc := escDefault
	if strings.HasPrefix(rest, "escape=") {
		v, after, _ := strings.Cut(rest[len("escape="):], " ")
		switch v {
		case "default":
		case "json":
			esc = escJSON
		case "none":
			esc = escNone
		default:
			return "", 0, fmt.Errorf("log format %q: escape=%s is not default, json or none", src, v)
		}
		rest = strings.TrimSpace(after)
	}
	if rest == "" || rest == ";" {
		if name == "combined" {
			return Combined, escDefault, nil
		}
		return "", 0, fmt.Errorf("log format %q: log_format %s has no format string", src, name)
	}
	body, tail, err := quoted(rest, src)
	if err != nil {
		return "", 0, err
	}
	if t := strings.TrimSpace(tail); t != ";" && t != "" {
		return "", 0, fmt.Errorf("log format %q: text %q after the quoted strings (want the directive to end with ;)", src, t)
	}
	return body, esc, nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// quoted reads one or more quoted strings (or bare words) separated by
// space, as nginx concatenates a log_format's arguments, up to a ;.
func quoted(s, src string) (body, rest string, err error) {
	var b strings.Builder
	for {
		s = strings.TrimLeft(s, " \t\r\n")
		if s == "" || s[0] == ';' {
			return b.String(), s, nil
		}
		q := s[0]
		if q != '\'' && q != '"' {
			// A bare word, ended by space or ;.
			i := strings.IndexAny(s, " \t\r\n;")
			if i < 0 {
				i = len(s)
			}
			b.WriteString(s[:i])
			s = s[i:]
			continue
		}
		i := 1
		for ; i < len(s) && s[i] != q; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
			}
		}
		if i >= len(s) {
			return "", "", fmt.Errorf("log format %q: the string opened with %c is not closed", src, q)
		}
		inner := s[1:i]
		// nginx's configuration parser turns \" \' \\ into the character.
		inner = strings.NewReplacer(`\"`, `"`, `\'`, `'`, `\\`, `\`).Replace(inner)
		b.WriteString(inner)
		s = s[i+1:]
	}
}
