// Package scenarios reads, validates and overrides scenario files: the
// server, the limiting proxy in front of it, and the tenants and their load.
//
// A scenario file is YAML (see scenarios/stock-balance.yaml). LoadWith and
// Parse check every field and fill in every default, so the engines never see a
// zero that means "not given"; a mistake comes back as an *Error naming the
// file, line, column, field, the bad value and a good one. LoadWith applies
// its --set PATH=VALUE overrides to the YAML before the checks, so an override
// is held to the same rules as the file. Format writes a Scenario back as
// YAML that loads to an equal Scenario.
//
// The bounds of the backend are workerpool's (workerpool.Config.Validate)
// and the syntax of keys, rates and zones package limit's: the parser holds
// a file to them and blames the line of the value, so that a file it
// accepts builds in either engine. ParseBackend holds the backend command's
// flags to the same rules.
//
// Defaults: time_scale auto (1 where nothing chooses), seed 1; backend workers 1 (gunicorn's default),
// backlog 2048, timeout none, on_client_abort continue, threads 1 (sync
// workers), boot 260ms (gunicorn 20.1 measured), max_requests 0 (never),
// max_requests_jitter 0, backlog_overflow drop (Linux's default); proxy
// read_timeout 60s (0s for none) and connect_timeout 60s (nginx's defaults),
// limit key $host, zone 10m, status 503;
// tenant count 1, addr 127.0.0.1, load model open with poisson arrivals, a
// closed model's on_timeout retry; a load's routes default to the backend's
// only route when it has one.
//
// It reads the scenario file and a trace it names, and nothing else: it
// never runs load, opens a socket or prints.
package scenarios
