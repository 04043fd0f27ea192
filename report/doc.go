// Package report owns what a run leaves behind: the Recorder the engines
// feed (HdrHistograms per tenant, route, group and series bucket, outcome
// counts and time series), results.json and its merge across shards,
// HdrHistogram interval logs, the SLO verdicts, the validity of a live run,
// comparisons of a sweep's points and their recommendation, and the
// renderings: PNG and interactive charts, report.html and the terminal
// summary.
//
// It never runs load, opens sockets, reads flags, prints or exits: output
// goes to the io.Writer or directory it is given, and the engines and the
// command line decide what to record and where to write it.
//
// The files follow that flow: recorder.go and recorder_results.go record
// and build Results (results.go, series.go); groups.go gathers tenants'
// histograms into groups once; merge.go, shards.go and join.go combine
// results and comparisons; slo.go, validate.go, compare.go and objective.go
// judge; chart*.go, compare_chart.go and interactive.go draw; html.go,
// compare_html.go, summary.go and hlog.go write.
package report
