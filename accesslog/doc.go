// Package accesslog reads web server access logs by their own format and
// turns an incident's logs into a scenario that replays it.
//
// An nginx log_format (CompileNginx) or a gunicorn access_log_format
// (CompileGunicorn) is compiled into a Format whose Parse reads one line
// into an Entry without allocating; a Reader streams a file of any size
// (gzip or not) through it in bounded memory, counting the lines that do
// not match and keeping the first few with what was expected. NormalPath
// folds a request path into its route. Import reads whole logs into a
// scenario file and the trace of its arrivals.
//
// It owns the reading of logs and what a scenario makes of them. It never
// prints, exits, reads flags or touches the network: the command wires it,
// and the scenario it writes is read back by package scenarios.
package accesslog
